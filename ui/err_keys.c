/*
 * err_keys.c — the TUI's words for what to do about an error: its keys, not command lines.
 */
#include "err_keys.h"

/* Where there is no key for it, the words are the command line's. */
const char *const bd_tui_action_words[BD_ACT__COUNT] = {
    [BD_ACT_NONE] = "",
    [BD_ACT_SIGN_TASK_CLASS] =
        "(P on it in the task classes view, as author, then a second person as reviewer)",
    [BD_ACT_SIGN_CASE] = "(P on the case)",
    [BD_ACT_SIGN_TWO] = "P on it, as author, then a second person as reviewer",
    [BD_ACT_SIGN_AUTHOR_FIRST] = "(as author: t switches the role)",
    [BD_ACT_ALLOW_WEAKER] = "; W in the run view runs it under '%s' instead",
    [BD_ACT_STAGE] = "u on a path",
    [BD_ACT_STAGE_PATH] = "(u on bench/%s in this view)",
    [BD_ACT_SET_KEY] = "(signing_key in .benchdesk/config.yaml)",
    [BD_ACT_PIN] = "`benchdesk pin %s`",
    [BD_ACT_PIN_ALL] = "`benchdesk pin`",
    [BD_ACT_MIGRATE] = "`benchdesk migrate`",
    [BD_ACT_LIST_TASK_CLASSES] = "`benchdesk list`",
    [BD_ACT_LIST_CASES] = "Enter on %s in the task classes view",
    [BD_ACT_CASE_NEW] = "`benchdesk case new %s CASE_ID`",
    [BD_ACT_RUN] = "r on a task class",
    [BD_ACT_RUN_SHARD] = "`benchdesk run --shard %s`",
    [BD_ACT_RECORD_NETWORK] = "R on the case, then N",
    [BD_ACT_RECORD] = "R on the case in its cases view",
    [BD_ACT_HISTORY_LOG] = "the history (h)",
    [BD_ACT_HISTORY_VERIFY] = "`benchdesk history verify`",
    [BD_ACT_VERIFY_TASK_CLASS] = "Enter on %s in the task classes view",
    [BD_ACT_COMMIT] = "C in the stage view (w)",
};

const char *bd_tui_err_text(const bd_err *err)
{
    static char ring[8][BD_ERR_MSG_MAX + 2 * BD_ERR_ARG_MAX];
    static unsigned next;
    char *out = ring[next++ % 8];
    return bd_err_render(err, bd_tui_action_words, out, sizeof(ring[0]));
}
