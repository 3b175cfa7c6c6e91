# Helpers for the jail tests: a task class `jailprobe` built from the fixture bench with
# tests/fixtures/jail/probe_rubric.py, one case per behaviour, pinned (drafts: run with
# --drafts). Source after lib.sh and run_lib.sh.
bd migrate >/dev/null 2>&1 || true
# jail_class BEHAVIOUR...: (re)build the class with these cases.
jail_class() {
    local src=$FX/bench/adversarial dst=$FX/bench/jailprobe b
    rm -rf "$dst"
    mkdir -p "$dst/cases"
    sed 's/^name: adversarial$/name: jailprobe/' "$src/registration.yaml" >"$dst/registration.yaml"
    cp "$BD_SOURCE_DIR/tests/fixtures/jail/probe_rubric.py" "$dst/rubric.py"
    for b in "$@"; do
        cp -a "$src/cases/pass" "$dst/cases/$b"
        rm -f "$dst/cases/$b/provenance.yaml"
        sed -i "s/^case_id: pass$/case_id: $b/; s/^title: \"pass\"$/title: \"$b\"/" "$dst/cases/$b/case.yaml"
        printf '%s\n' "$b" >"$dst/cases/$b/expected/behavior.txt"
    done
    bd pin jailprobe >/dev/null
}
# namespaces_or_skip: 0 when the jail can be built; otherwise a failure under
# BD_REQUIRE_NAMESPACES=1, else exit 77 (skipped in ctest).
namespaces_or_skip() {
    local why
    if why=$(bd run jailprobe --isolation namespaces --drafts --case "$1" 2>&1 >/dev/null); then return 0; fi
    if [ "${BD_REQUIRE_NAMESPACES:-0}" = 1 ]; then
        echo "FAIL: BD_REQUIRE_NAMESPACES=1 and the jail cannot be built: $why"; exit 1
    fi
    echo "SKIP: the namespaces jail is unavailable here: $why"; exit 77
}
