#!/usr/bin/env bash
# Installing benchdesk: `cmake --install` into a temporary DESTDIR, the .deb CPack builds
# (contents, Depends from shlibdeps, lintian without errors), and the unpacked package
# run from a temporary root, then moved elsewhere: --version from the VERSION file, list
# and verify and a run on a copy of the demo bench, the themes found next to the binary,
# the man page and the bash completion in place.
source "$(dirname "$0")/lib.sh"
: "${BD_BUILD_DIR:?run through ctest}"
for tool in dpkg-deb cpack lintian man; do
    if ! command -v "$tool" >/dev/null; then
        echo "SKIP: $tool is not installed (./scripts/setup --test-deps installs it)"
        exit 77
    fi
done
version=$(head -n1 "$BD_SOURCE_DIR/VERSION")
demo=$(demo_copy)

# files_present ROOT: every file of the install layout is there with its mode.
files_present() {
    local r=$1 f mode
    for f in bin/benchdesk:755 share/man/man1/benchdesk.1.gz:644 \
        share/bash-completion/completions/benchdesk:644 \
        share/benchdesk/themes/default.yaml:644 share/benchdesk/themes/light.yaml:644 \
        share/benchdesk/themes/high-contrast.yaml:644 \
        share/benchdesk/themes/monochrome.yaml:644 share/doc/benchdesk/README.md:644 \
        share/doc/benchdesk/formats.md:644 share/doc/benchdesk/copyright:644 \
        share/doc/benchdesk/LICENSE:644 share/doc/benchdesk/changelog.gz:644; do
        mode=$(stat -c %a "$r/usr/${f%:*}" 2>/dev/null || echo missing)
        [ "$mode" = "${f#*:}" ] && pass "$r: usr/${f%:*} ($mode)" ||
            fail "$r: usr/${f%:*} is $mode, wanted ${f#*:}"
    done
    # The licence: LICENSE as in the source tree, and a machine-readable Debian copyright
    # file granting the same MIT terms (no "all rights reserved" left over).
    cmp -s "$BD_SOURCE_DIR/LICENSE" "$r/usr/share/doc/benchdesk/LICENSE" &&
        pass "$r: LICENSE installed as in the source tree" ||
        fail "$r: usr/share/doc/benchdesk/LICENSE differs from the source tree's"
    local c="$r/usr/share/doc/benchdesk/copyright"
    if head -n1 "$c" | grep -qx 'Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/' &&
        grep -qx 'License: MIT' "$c" && grep -q '^ Permission is hereby granted' "$c" &&
        ! grep -qi 'rights are reserved' "$c"; then
        pass "$r: the copyright file grants MIT"
    else
        fail "$r: the copyright file is not a DEP-5 file granting MIT: $(head -n 12 "$c")"
    fi
}

# ---- cmake --install into a DESTDIR ---------------------------------------------------
dest="$BD_TMP/destdir"
if DESTDIR="$dest" cmake --install "$BD_BUILD_DIR" --prefix /usr >"$BD_TMP/install.log" 2>&1; then
    pass "cmake --install into DESTDIR"
else
    fail "cmake --install failed: $(cat "$BD_TMP/install.log")"
fi
files_present "$dest"
out=$("$dest/usr/bin/benchdesk" --version)
[ "$out" = "benchdesk $version" ] && pass "installed --version: $out" ||
    fail "installed --version says '$out', VERSION says $version"

# ---- the .deb ---------------------------------------------------------------------------
pkgdir="$BD_TMP/pkg"
if (cd "$BD_BUILD_DIR" && cpack -G DEB -B "$pkgdir") >"$BD_TMP/cpack.log" 2>&1; then
    pass "cpack -G DEB"
else
    fail "cpack failed: $(cat "$BD_TMP/cpack.log")"
    finish
fi
deb=$(ls "$pkgdir"/benchdesk_*.deb)
[ "$(basename "$deb")" = "benchdesk_${version}_$(dpkg --print-architecture).deb" ] &&
    pass "package file $(basename "$deb")" || fail "unexpected package name $deb"

info=$(dpkg-deb -I "$deb")
field() { dpkg-deb -f "$deb" "$1"; }
[ "$(field Version)" = "$version" ] && pass "Version: $version" ||
    fail "Version: $(field Version), VERSION says $version"
depends=$(field Depends)
for lib in libc6 libgpgme11 libgit2-1.5 libuv1 libncursesw6 libyaml-0-2 libcjson1 libssl3 \
    libseccomp2 libsqlite3-0; do
    grep -qE "(^|, )$lib( |,|$)" <<<"$depends" && pass "Depends names $lib" ||
        fail "Depends lacks $lib: $depends"
done
# The programs it runs are Depends, not Recommends: no signature is checked without gpg.
for prog in gnupg python3 less; do
    grep -qE "(^|, )$prog( |,|$)" <<<"$depends" && pass "Depends names $prog (a program it runs)" ||
        fail "Depends lacks $prog: $depends"
done
grep -q "^ Maintainer: .*<.*@.*>" <<<"$info" && pass "a Maintainer with an address" ||
    fail "no Maintainer address: $info"

contents=$(dpkg-deb -c "$deb")
for f in ./usr/bin/benchdesk ./usr/share/man/man1/benchdesk.1.gz \
    ./usr/share/bash-completion/completions/benchdesk \
    ./usr/share/benchdesk/themes/default.yaml ./usr/share/doc/benchdesk/copyright \
    ./usr/share/doc/benchdesk/changelog.gz ./usr/share/doc/benchdesk/user-guide.md \
    ./usr/share/doc/benchdesk/LICENSE; do
    grep -qE " $f$" <<<"$contents" && pass "dpkg -c: $f" || fail "dpkg -c: $f is missing"
done
# Everything is owned by root and lives under /usr.
bad=$(awk '$2 != "root/root" || $6 !~ /^\.\/usr\// {print}' <<<"$contents")
[ -z "$bad" ] && pass "every entry root/root under ./usr/" || fail "stray entries: $bad"

# lintian: no error (warnings and notes are printed for the reader).
lint=$(lintian --tag-display-limit 0 "$deb" 2>&1 | grep -v "running with root privileges") || true
[ -n "$lint" ] && printf '%s\n' "$lint"
if grep -q "^E: " <<<"$lint"; then
    fail "lintian reports errors"
else
    pass "lintian: no errors"
fi

# ---- the unpacked package, run from where it lies ---------------------------------------
check_root() {
    local r=$1 b="$1/usr/bin/benchdesk" out rc
    out=$("$b" --version) && [ "$out" = "benchdesk $version" ] && pass "$r: --version" ||
        fail "$r: --version says '$out'"
    expect 0 - -- "$b" -C "$demo" list
    expect 0 - -- "$b" -C "$demo" verify
    out=$("$b" -C "$demo" list vuln-remediation) && grep -q "ghsa-demo-0001" <<<"$out" &&
        pass "$r: list vuln-remediation" || fail "$r: list vuln-remediation: $out"
    # Themes: a theme is loaded before the TUI asks for a terminal, so without one a
    # found theme ends in "needs a terminal" and a missing one in "no theme".
    out=$(HOME="$BD_TMP/home" "$b" -C "$demo" --theme pkgcheck </dev/null 2>&1) || true
    grep -q "needs a terminal" <<<"$out" &&
        pass "$r: a theme only in <bin>/../share/benchdesk/themes is found" ||
        fail "$r: the installed themes were not found: $out"
    out=$(HOME="$BD_TMP/home" "$b" -C "$demo" --theme no-such-theme </dev/null 2>&1) || true
    grep -q "$r/usr/bin/../share/benchdesk/themes" <<<"$out" &&
        grep -q "high-contrast" <<<"$out" &&
        pass "$r: a missing theme names the installed themes dir and its themes" ||
        fail "$r: missing theme message: $out"
    # BENCHDESK_THEMES_DIR and the XDG config dir come first.
    mkdir -p "$BD_TMP/xdg/benchdesk/themes"
    out=$(XDG_CONFIG_HOME="$BD_TMP/xdg" "$b" -C "$demo" --theme no-such-theme </dev/null 2>&1) ||
        true
    grep -q "looked in $BD_TMP/xdg/benchdesk/themes, " <<<"$out" &&
        pass "$r: \$XDG_CONFIG_HOME/benchdesk/themes is looked in first" ||
        fail "$r: XDG config dir not searched first: $out"
    # The man page: found by man in the tree, and it renders.
    out=$(MANPATH="$r/usr/share/man" man -w benchdesk 2>&1) &&
        [ "$out" = "$r/usr/share/man/man1/benchdesk.1.gz" ] && pass "$r: man -w benchdesk" ||
        fail "$r: man -w benchdesk: $out"
    out=$(MANWIDTH=80 man -l "$r/usr/share/man/man1/benchdesk.1.gz" 2>&1)
    grep -q "benchdesk migrate" <<<"$out" && pass "$r: the man page renders" ||
        fail "$r: man page did not render: $(head -5 <<<"$out")"
    grep -qE "^benchdesk $version +" <<<"$(tail -n1 <<<"$out")" &&
        pass "$r: the man page footer says benchdesk $version" ||
        fail "$r: man page footer: $(tail -n1 <<<"$out")"
    # The completion file registers itself from its installed place.
    out=$(bash --noprofile --norc -c \
        'source "$1" && complete -p benchdesk' _ "$r/usr/share/bash-completion/completions/benchdesk")
    grep -q -- "-F _benchdesk benchdesk" <<<"$out" && pass "$r: installed completion loads" ||
        fail "$r: installed completion: $out"
}

root="$BD_TMP/root"
dpkg-deb -x "$deb" "$root" && pass "dpkg-deb -x" || fail "dpkg-deb -x failed"
files_present "$root"
cp "$root/usr/share/benchdesk/themes/light.yaml" "$root/usr/share/benchdesk/themes/pkgcheck.yaml"
check_root "$root"

# A run scored by the installed binary records its version as harness_version.
"$root/usr/bin/benchdesk" -C "$demo" run vuln-remediation --case ghsa-demo-0001-axios-csrf-token-leak \
    --jobs 1 >"$BD_TMP/run.log" 2>&1 || true
# The newest record: the last line of the newest segment.
rec=$(cat "$demo"/.benchdesk/history/segments/*.jsonl 2>/dev/null | tail -n1 || true)
if [ -n "$rec" ] && python3 -c 'import json,sys; sys.exit(json.loads(sys.argv[1])["harness_version"] != sys.argv[2])' \
    "$rec" "$version"; then
    pass "the run's history record has harness_version $version"
else
    fail "no record with harness_version $version: $(cat "$BD_TMP/run.log")"
fi

# Relocated: the same tree moved elsewhere still finds its themes and pages.
moved="$BD_TMP/elsewhere/opt-root"
mkdir -p "$BD_TMP/elsewhere"
mv "$root" "$moved"
check_root "$moved"

finish
