#!/usr/bin/env bash
# One meaning for every YAML reader (docs/security.md): a case.yaml that libyaml refuses
# is refused by benchdesk too, whichever of its two readers would have read it. The case
# here is a simple key padded with spaces so that its ':' lies more than 1,024 characters
# from the key's start (YAML's simple-key limit): `pin` and `verify` refuse it with the
# one-line yaml.syntax error, file and line, that any other invalid YAML gets, and `pin`
# writes nothing. 1,024 is still a key, for benchdesk as for the other readers.
. "$(dirname "$0")/lib.sh"
bd() { "$BD_BIN" "$@"; }

root=$(demo_copy)
# A case whose case.yaml has a top-level title and a flow-mapping source_ref.
tc= case1=
for f in "$root"/bench/*/cases/*/case.yaml; do
    if grep -q '^title: ' "$f" && grep -q 'source_ref: {type: ' "$f"; then
        case1=$(basename "$(dirname "$f")")
        tc=$(basename "$(dirname "$(dirname "$(dirname "$f")")")")
        break
    fi
done
[ -n "$case1" ] || { fail "no case with a title and a flow source_ref"; finish; }
cyaml="$root/bench/$tc/cases/$case1/case.yaml"
digests="$root/bench/$tc/cases/digests.yaml"
cp "$cyaml" "$BD_TMP/case.orig"
cp "$digests" "$BD_TMP/digests.orig"
restore() { cp "$BD_TMP/case.orig" "$cyaml"; cp "$BD_TMP/digests.orig" "$digests"; }

# pad block|flow DIST: the title key (block) or source_ref's type key (flow) with spaces
# after it, so that its ':' is DIST characters from the key's first one.
pad() {
    python3 - "$cyaml" "$1" "$2" <<'PY'
import sys
path, where, dist = sys.argv[1], sys.argv[2], int(sys.argv[3])
text = open(path, encoding="utf-8").read()
if where == "block":
    old, key, pre = "\ntitle: ", "title", "\n"
else:
    old, key, pre = "source_ref: {type: ", "type", "source_ref: {"
assert old in text
new = pre + key + " " * (dist - len(key)) + ": "
open(path, "w", encoding="utf-8").write(text.replace(old, new, 1))
PY
}

# What a reviewer's YAML tool says of the file (PyYAML has the same 1,024 rule), when
# there is one: "ok" or "refused".
pyyaml() {
    python3 - "$cyaml" <<'PY'
import sys
try:
    import yaml
except ImportError:
    print("absent"); sys.exit(0)
try:
    yaml.safe_load(open(sys.argv[1], encoding="utf-8"))
    print("ok")
except yaml.YAMLError:
    print("refused")
PY
}

# The line of the key in case.yaml.
key_line() { grep -n "$1" "$BD_TMP/case.orig" | head -1 | cut -d: -f1; }

# refused WHERE DIST: pin and verify refuse it as invalid YAML, naming the file and the
# key's line, in one line each; pin writes nothing.
refused() {
    local where=$1 dist=$2 line out rc
    restore
    pad "$where" "$dist"
    if [ "$where" = block ]; then line=$(key_line '^title: '); else line=$(key_line 'source_ref: {type: '); fi
    case $(pyyaml) in
    refused | absent) pass "$where key at $dist: PyYAML refuses it too (or is absent)" ;;
    *) fail "$where key at $dist: PyYAML reads it" ;;
    esac
    cp "$cyaml" "$BD_TMP/padded"
    expect 2 yaml.syntax -- bd -C "$root" pin "$tc"
    expect 2 yaml.syntax -- bd -C "$root" pin "$tc" "$case1"
    rc=0
    out=$(bd -C "$root" pin "$tc" "$case1" 2>&1 >/dev/null) || rc=$?
    if [ "$(printf '%s\n' "$out" | wc -l)" = 1 ] &&
        grep -q "^benchdesk: yaml.syntax: $cyaml:$line:[0-9]*: .*; fix the YAML syntax\$" <<<"$out"; then
        pass "$where key at $dist: one line naming case.yaml:$line"
    else
        fail "$where key at $dist: pin said (exit $rc): ${out:0:300}"
    fi
    cmp -s "$digests" "$BD_TMP/digests.orig" && pass "$where key at $dist: pin wrote no pin" ||
        fail "$where key at $dist: pin wrote digests.yaml"
    cmp -s "$cyaml" "$BD_TMP/padded" && pass "$where key at $dist: pin left case.yaml alone" ||
        fail "$where key at $dist: pin rewrote case.yaml"
    expect 2 yaml.syntax -- bd -C "$root" verify "$tc"
    rc=0
    out=$(bd -C "$root" verify "$tc" 2>&1 >/dev/null) || rc=$?
    grep -q "^benchdesk: yaml.syntax: $cyaml:$line:" <<<"$out" &&
        pass "$where key at $dist: verify names case.yaml:$line" ||
        fail "$where key at $dist: verify said (exit $rc): ${out:0:300}"
}

# accepted WHERE DIST: read as a key, as by the other readers.
accepted() {
    local where=$1 dist=$2 out
    restore
    pad "$where" "$dist"
    case $(pyyaml) in
    ok | absent) pass "$where key at $dist: PyYAML reads it (or is absent)" ;;
    *) fail "$where key at $dist: PyYAML refuses it" ;;
    esac
    expect 0 - -- bd -C "$root" pin "$tc" "$case1"
    out=$(bd -C "$root" verify "$tc" 2>&1 >/dev/null || true)
    grep -q '^benchdesk: yaml\.' <<<"$out" && fail "$where key at $dist: verify: $out" ||
        pass "$where key at $dist: verify reads it"
}

# Any other invalid YAML, for comparison: the same code and exit status.
restore
sed -i 's/^title: .*/title: "unclosed/' "$cyaml"
expect 2 yaml.syntax -- bd -C "$root" pin "$tc" "$case1"
expect 2 yaml.syntax -- bd -C "$root" verify "$tc"

for where in block flow; do
    accepted "$where" 1000
    accepted "$where" 1024
    refused "$where" 1025
    refused "$where" 1030
done
restore
expect 0 - -- bd -C "$root" verify "$tc"
finish
