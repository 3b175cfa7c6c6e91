/*
 * actions.c — the action and key tables of app.h, expanded; help and hints read them,
 * so what the help says is what the keys do.
 */
#include <stdio.h>
#include <string.h>

#include "app.h"

typedef struct action_info {
    const char *name, *hint, *help;
} action_info;

static const action_info actions[] = {
#define BD_X(id, name, hint, help) {name, hint, help},
    BD_UI_ACTIONS(BD_X)
#undef BD_X
};

typedef struct binding {
    int key;
    bd_action action;
} binding;

static const binding bindings[] = {
#define BD_X(key, action) {key, action},
    BD_UI_KEYS(BD_X)
#undef BD_X
};

const bd_action bd_global_actions[] = {
    BD_A_UP,      BD_A_DOWN,    BD_A_PAGE_UP,  BD_A_PAGE_DOWN, BD_A_HOME,    BD_A_END,
    BD_A_HISTORY, BD_A_RUNVIEW, BD_A_MESSAGES, BD_A_RELOAD,    BD_A_REDRAW,  BD_A_HELP,
    BD_A_ESCAPE,  BD_A_BACK,    BD_A_QUIT,     BD_A_INTERRUPT, BD_A_SUSPEND, BD_A_NONE};

bd_action bd_action_for_key(int key, const bd_action *view_actions)
{
    bd_action first = BD_A_NONE;
    for (size_t i = 0; i < sizeof(bindings) / sizeof(bindings[0]); i++) {
        if (bindings[i].key != key)
            continue;
        for (const bd_action *a = view_actions; a && *a != BD_A_NONE; a++)
            if (*a == bindings[i].action)
                return *a;
        if (first == BD_A_NONE)
            first = bindings[i].action;
    }
    return first;
}

const char *bd_action_name(bd_action a)
{
    return a < BD_A__COUNT ? actions[a].name : "";
}

const char *bd_action_hint(bd_action a)
{
    return a < BD_A__COUNT ? actions[a].hint : "";
}

const char *bd_action_help(bd_action a)
{
    return a < BD_A__COUNT ? actions[a].help : "";
}

static void bd_key_name(int key, char *out, size_t cap)
{
    switch (key) {
    case KEY_UP:
        snprintf(out, cap, "Up");
        return;
    case KEY_DOWN:
        snprintf(out, cap, "Down");
        return;
    case KEY_LEFT:
        snprintf(out, cap, "Left");
        return;
    case KEY_RIGHT:
        snprintf(out, cap, "Right");
        return;
    case KEY_PPAGE:
        snprintf(out, cap, "PgUp");
        return;
    case KEY_NPAGE:
        snprintf(out, cap, "PgDn");
        return;
    case KEY_HOME:
        snprintf(out, cap, "Home");
        return;
    case KEY_END:
        snprintf(out, cap, "End");
        return;
    case KEY_ENTER:
    case '\r':
    case '\n':
        snprintf(out, cap, "Enter");
        return;
    case '\t':
        snprintf(out, cap, "Tab");
        return;
    case ' ':
        snprintf(out, cap, "Space");
        return;
    case 27:
        snprintf(out, cap, "Esc");
        return;
    default:
        break;
    }
    if (key >= KEY_F(1) && key <= KEY_F(12))
        snprintf(out, cap, "F%d", key - KEY_F0);
    else if (key > 0 && key < 32)
        snprintf(out, cap, "Ctrl-%c", 'A' + key - 1);
    else if (key >= 32 && key < 127)
        snprintf(out, cap, "%c", key);
    else
        snprintf(out, cap, "key %d", key);
}

void bd_action_keys(bd_action a, char *out, size_t cap)
{
    size_t len = 0;
    char prev[32] = "";
    out[0] = '\0';
    for (size_t i = 0; i < sizeof(bindings) / sizeof(bindings[0]); i++) {
        if (bindings[i].action != a)
            continue;
        char name[32];
        bd_key_name(bindings[i].key, name, sizeof(name));
        if (strcmp(name, prev) == 0) /* '\r', '\n' and KEY_ENTER are all "Enter" */
            continue;
        snprintf(prev, sizeof(prev), "%s", name);
        int n = snprintf(out + len, cap - len, "%s%s", len ? ", " : "", name);
        if (n < 0 || (size_t)n >= cap - len)
            break;
        len += (size_t)n;
    }
}

void bd_action_first_key(bd_action a, char *out, size_t cap)
{
    out[0] = '\0';
    for (size_t i = 0; i < sizeof(bindings) / sizeof(bindings[0]); i++)
        if (bindings[i].action == a) {
            bd_key_name(bindings[i].key, out, cap);
            return;
        }
}
