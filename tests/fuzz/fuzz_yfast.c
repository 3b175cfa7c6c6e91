/*
 * fuzz_yfast.c — libFuzzer target holding the fast reader of the plain YAML subset
 * (src/yfast.c) to libyaml: whatever yfast accepts, libyaml reads to the same tree, node
 * for node with lines and columns; and the default reader answers exactly as libyaml
 * does, error message included.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "ydoc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    bd_ydoc *fast = NULL, *lib = NULL, *any = NULL;
    bd_err ef = BD_ERR_INIT, el = BD_ERR_INIT, ea = BD_ERR_INIT;
    int rf = bd_ydoc_parse_mode(&fast, text, size, "fuzz.yaml", BD_YAML_MAX_BYTES, NULL,
                                BD_YDOC_FAST, &ef);
    int rl = bd_ydoc_parse_mode(&lib, text, size, "fuzz.yaml", BD_YAML_MAX_BYTES, NULL,
                                BD_YDOC_LIBYAML, &el);
    int ra = bd_ydoc_parse_mode(&any, text, size, "fuzz.yaml", BD_YAML_MAX_BYTES, NULL, BD_YDOC_ANY,
                                &ea);
    check(rf == 0 || rf == 1 || rf == -1, "yfast returns 0, 1 or -1");
    check(rf != 1 || !fast, "a declined input builds nothing");
    if (rf == 0) {
        check(rl == 0, "yfast accepted what libyaml refuses");
        check(bd_ynode_equal(fast->root, lib->root), "yfast and libyaml built different trees");
    }
    check(ra == rl, "the default reader and libyaml disagree on success");
    if (rl == 0)
        check(bd_ynode_equal(any->root, lib->root), "the default reader built another tree");
    else
        check(strcmp(ea.msg, el.msg) == 0, "the default reader gave another error");
    bd_ydoc_free(fast);
    bd_ydoc_free(lib);
    bd_ydoc_free(any);
    return 0;
}
