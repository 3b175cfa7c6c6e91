/*
 * tui.c — `benchdesk` with no subcommand: the terminal and the one libuv loop that owns
 * it (docs/user-guide.md, docs/architecture.md).
 *
 * The loop owns everything: keys come through a uv_poll on fd 0 and are drained with
 * curses in nodelay mode until ERR (never a uv_tty on fd 0); SIGWINCH, SIGINT, SIGTERM,
 * SIGHUP and SIGTSTP arrive through uv_signal and only queue work for the loop; timers
 * drive the spinner, the clock and coalesced redraws; slow work runs on the thread pool
 * (work.c). SIGCHLD is never touched (libuv owns it). Curses is called from the loop
 * thread only.
 *
 * The terminal is restored on every exit: q/Q, Ctrl-C, SIGTERM/SIGHUP, an error (all
 * through really_quit), and a crash signal (crash_handler: async-signal-safe writes of
 * the saved terminal state, then the signal goes on to its previous handler).
 */
#include <errno.h>
#include <fcntl.h>
#include <locale.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <term.h>

#include "err_keys.h"
#include "app.h"
#include "config.h"
#include "desk.h"
#include "gitops.h"
#include "tui.h"
#include "editor.h"
#include "exec.h"
#include "viewer.h"
#include "watch.h"

#define RENDER_MIN_MS 16  /* at most ~60 frames a second for background updates */
#define TICK_FAST_MS  100 /* spinner: 10 Hz while something moves */
#define TICK_SLOW_MS  1000
#define MIN_COLS      80
#define MIN_ROWS      24
#define MAX_LATENCIES 100000

typedef struct tui {
    bd_app app;
    uv_loop_t loop;
    uv_poll_t input;
    uv_signal_t sigs[5];
    uv_timer_t render_timer, tick_timer;
    int n_handles_open;
    bool render_scheduled;
    uint64_t last_render_ms;
    uint64_t tick_ms;
    int last_minute;
    SCREEN *screen;
    bool curses_on;
    int empty_reads;
    /* measurements (BENCHDESK_TUI_STATS) */
    const char *stats_path;
    const char *exit_after;
    double first_draw_ms;
    uint64_t key_ns; /* when the oldest key not yet drawn arrived, 0 if none */
    double *lat;
    size_t n_lat;
    size_t frames;
    bd_err fatal;
} tui;

/* ---- terminal state for the crash handler (async-signal-safe restore) ------------------ */

static struct termios saved_tio;
static bool have_tio;
static int saved_fl = -1;
static char restore_seq[256];
static size_t restore_len;
static volatile sig_atomic_t term_active;
static struct sigaction old_crash[5];
static const int crash_sigs[5] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};

static void append_cap(const char *cap)
{
    char *s = tigetstr((char *)cap);
    if (!s || s == (char *)-1)
        return;
    size_t n = strlen(s);
    if (restore_len + n < sizeof(restore_seq)) {
        memcpy(restore_seq + restore_len, s, n);
        restore_len += n;
    }
}

static void prepare_restore(void)
{
    restore_len = 0;
    /* Mouse reporting off (the modes curses may have turned on), then the terminfo
     * strings endwin would send. */
    const char *mouse_off = "\033[?1000l\033[?1002l\033[?1003l\033[?1006l";
    memcpy(restore_seq, mouse_off, strlen(mouse_off));
    restore_len = strlen(mouse_off);
    append_cap("sgr0");
    append_cap("cnorm");
    append_cap("rmkx");
    append_cap("rmcup");
}

static void crash_handler(int sig)
{
    if (term_active) {
        term_active = 0;
        if (have_tio)
            tcsetattr(0, TCSANOW, &saved_tio);
        if (saved_fl >= 0)
            fcntl(0, F_SETFL, saved_fl);
        ssize_t w = write(1, restore_seq, restore_len);
        (void)w;
    }
    /* Hand the signal on: the previous handler (a sanitizer's report), else the default
     * action, which re-raises it with its core dump. */
    for (size_t i = 0; i < 5; i++) {
        if (crash_sigs[i] != sig)
            continue;
        sigaction(sig, &old_crash[i], NULL);
        if (old_crash[i].sa_handler == SIG_DFL || old_crash[i].sa_handler == SIG_IGN ||
            (old_crash[i].sa_flags & SA_SIGINFO))
            signal(sig, SIG_DFL);
        else {
            old_crash[i].sa_handler(sig);
            signal(sig, SIG_DFL);
        }
    }
    raise(sig);
}

static void install_crash_handlers(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = crash_handler;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_NODEFER;
    for (size_t i = 0; i < 5; i++)
        sigaction(crash_sigs[i], &sa, &old_crash[i]);
}

static void remove_crash_handlers(void)
{
    for (size_t i = 0; i < 5; i++)
        sigaction(crash_sigs[i], &old_crash[i], NULL);
}

/* ---- time ------------------------------------------------------------------------------ */

static uint64_t now_ns(void)
{
    return bd_app_clock_ns();
}

/* ---- drawing --------------------------------------------------------------------------- */

static void draw_too_small(tui *t)
{
    int rows = LINES, cols = COLS;
    char l2[96];
    snprintf(l2, sizeof(l2), "%dx%d, needs at least %dx%d", cols, rows, MIN_COLS, MIN_ROWS);
    const char *msg[3] = {"Terminal too small", l2, "enlarge it, or press q to quit"};
    werase(stdscr);
    for (int i = 0; i < 3; i++) {
        int y = rows / 2 - 1 + i;
        int w = bd_text_width(msg[i]);
        int x = w < cols ? (cols - w) / 2 : 0;
        if (y >= 0 && y < rows)
            bd_draw_text(stdscr, y, x, cols - x, msg[i], i == 0 ? A_BOLD : A_NORMAL, false);
    }
    touchwin(stdscr);
    wnoutrefresh(stdscr);
    (void)t;
}

static void note_frame(tui *t)
{
    uint64_t now = now_ns();
    t->last_render_ms = (now - t->app.start_ns) / 1000000ull;
    t->frames++;
    if (t->first_draw_ms < 0)
        t->first_draw_ms = (double)(now - t->app.start_ns) / 1e6;
    if (t->key_ns) {
        if (t->lat && t->n_lat < MAX_LATENCIES)
            t->lat[t->n_lat++] = (double)(now - t->key_ns) / 1e6;
        t->key_ns = 0;
    }
}

static void render(tui *t)
{
    bd_app *app = &t->app;
    if (!t->curses_on || app->quitting)
        return;
    if (app->too_small) {
        draw_too_small(t);
        curs_set(0);
        doupdate();
        app->dirty = 0;
        note_frame(t);
        return;
    }
    if (app->dirty & BD_DIRTY_HEADER) {
        bd_desk_draw_header(app);
        wnoutrefresh(app->header);
    }
    if ((app->dirty & BD_DIRTY_BODY) && app->top) {
        werase(app->body);
        app->top->ops->draw(app->top, app->body);
        bd_app_draw_message_panel(app);
        wnoutrefresh(app->body);
        /* The position in the status line follows the body. */
        app->dirty |= BD_DIRTY_STATUS;
    }
    if ((app->dirty & BD_DIRTY_STATUS) || app->prompt.active) {
        bd_app_draw_status(app);
        wnoutrefresh(app->status); /* last, so the prompt's cursor is where it shows */
    }
    curs_set(app->prompt.active ? 1 : 0);
    doupdate();
    app->dirty = 0;
    note_frame(t);
    if (t->exit_after && strcmp(t->exit_after, "first-draw") == 0)
        bd_app_quit(app, 0);
}

static void on_render(uv_timer_t *h)
{
    tui *t = h->data;
    t->render_scheduled = false;
    render(t);
}

static void render_now(tui *t)
{
    if (t->render_scheduled) {
        uv_timer_stop(&t->render_timer);
        t->render_scheduled = false;
    }
    render(t);
}

static void schedule_render(bd_app *app)
{
    tui *t = app->priv;
    if (app->quitting || t->render_scheduled || !t->curses_on)
        return;
    uint64_t now = bd_app_now_ms(app);
    uint64_t due = t->last_render_ms + RENDER_MIN_MS;
    uv_timer_start(&t->render_timer, on_render, due > now ? due - now : 0, 0);
    t->render_scheduled = true;
}

/* ---- layout ---------------------------------------------------------------------------- */

static void free_windows(bd_app *app)
{
    if (app->header)
        delwin(app->header);
    if (app->body)
        delwin(app->body);
    if (app->status)
        delwin(app->status);
    app->header = app->body = app->status = NULL;
}

static void layout(tui *t)
{
    bd_app *app = &t->app;
    free_windows(app);
    app->rows = LINES;
    app->cols = COLS;
    app->too_small = app->rows < MIN_ROWS || app->cols < MIN_COLS;
    if (!app->too_small) {
        app->header = newwin(1, app->cols, 0, 0);
        app->body = newwin(app->rows - 2, app->cols, 1, 0);
        app->status = newwin(1, app->cols, app->rows - 1, 0);
        if (!app->header || !app->body || !app->status) {
            free_windows(app);
            app->too_small = true; /* out of memory: the plain message is all we can do */
        }
    }
    if (!app->too_small)
        for (bd_view *v = app->top; v; v = v->below)
            if (v->ops->resize)
                v->ops->resize(v, getmaxy(app->body), getmaxx(app->body));
    clearok(curscr, TRUE); /* the terminal's own reflow may have moved anything */
    app->dirty = BD_DIRTY_ALL;
}

static void redraw_all(bd_app *app)
{
    clearok(curscr, TRUE);
    bd_app_invalidate(app, BD_DIRTY_ALL);
}

static void do_resize(tui *t)
{
    struct winsize ws;
    if (ioctl(1, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 && ws.ws_col > 0)
        resizeterm(ws.ws_row, ws.ws_col);
    layout(t);
    render_now(t);
}

/* ---- quitting -------------------------------------------------------------------------- */

static void close_cb(uv_handle_t *h)
{
    tui *t = h->data;
    t->n_handles_open--;
}

static void restore_terminal(tui *t)
{
    if (!t->curses_on)
        return;
    term_active = 0;
    mousemask(0, NULL);
    endwin();
    /* endwin leaves the mouse mode string unsent on some terminals; say it once more. */
    ssize_t w = write(1, "\033[?1000l\033[?1002l\033[?1006l", 24);
    (void)w;
    if (saved_fl >= 0)
        fcntl(0, F_SETFL, saved_fl);
    t->curses_on = false;
}

/* Leave: restore the terminal at once, cancel queued work, close every handle; the loop
 * then ends when the running jobs have reported. */
static void really_quit(tui *t, int status)
{
    bd_app *app = &t->app;
    if (app->quitting)
        return;
    /* A run still going is cancelled: its children are killed, the loop then drains. */
    bd_desk_abandon_run(app);
    app->quitting = true;
    app->exit_status = status;
    restore_terminal(t);
    bd_work_cancel_all(app);
    bd_watch_stop(app->watch);
    app->watch = NULL;
    uv_handle_t *hs[] = {(uv_handle_t *)&t->input,        (uv_handle_t *)&t->sigs[0],
                         (uv_handle_t *)&t->sigs[1],      (uv_handle_t *)&t->sigs[2],
                         (uv_handle_t *)&t->sigs[3],      (uv_handle_t *)&t->sigs[4],
                         (uv_handle_t *)&t->render_timer, (uv_handle_t *)&t->tick_timer};
    for (size_t i = 0; i < sizeof(hs) / sizeof(hs[0]); i++)
        if (hs[i]->data && !uv_is_closing(hs[i]))
            uv_close(hs[i], close_cb);
}

static void leave(bd_app *app, int status)
{
    really_quit(app->priv, status);
}

static void suspend(bd_app *app);

/* ---- loop callbacks -------------------------------------------------------------------- */

static void on_mouse(tui *t)
{
    MEVENT ev;
    bd_app *app = &t->app;
    if (getmouse(&ev) != OK || app->too_small || !app->top || !app->top->ops->mouse)
        return;
    int by = ev.y - 1; /* the body starts below the header */
    if (by < 0 || by >= getmaxy(app->body))
        return;
    app->top->ops->mouse(app->top, &ev, by, ev.x);
    bd_app_invalidate(app, BD_DIRTY_BODY | BD_DIRTY_STATUS);
}

/* One key as read: a curses key code (is_code) or a character. */
typedef struct raw_key {
    int key;
    bool is_code;
} raw_key;

/* The curses key for a raw CSI/SS3 sequence the terminfo entry did not know (a TERM that
 * says xterm-256color inside tmux sends ESC [ 1 ~ for Home), or 0: unknown, ignored. */
static int csi_key(char intro, const char *params, char final)
{
    if (final == '~') {
        int n = atoi(params);
        switch (n) {
        case 1:
        case 7:
            return KEY_HOME;
        case 4:
        case 8:
            return KEY_END;
        case 5:
            return KEY_PPAGE;
        case 6:
            return KEY_NPAGE;
        case 11:
            return KEY_F(1);
        default:
            return 0;
        }
    }
    /* Modifiers ("1;5A") do not change which arrow it is. */
    switch (final) {
    case 'A':
        return KEY_UP;
    case 'B':
        return KEY_DOWN;
    case 'C':
        return KEY_RIGHT;
    case 'D':
        return KEY_LEFT;
    case 'H':
        return KEY_HOME;
    case 'F':
        return KEY_END;
    case 'P':
        return intro == 'O' || params[0] ? KEY_F(1) : 0;
    default:
        return 0;
    }
}

/* Turn the keys of one read into actions: an ESC followed by a CSI or SS3 sequence is
 * decoded (or, unknown, dropped whole); ESC followed by another character (Alt-x) is
 * dropped; only an ESC on its own is the Esc key. */
static void dispatch_keys(tui *t, const raw_key *ks, size_t n)
{
    bd_app *app = &t->app;
    for (size_t i = 0; i < n && !app->quitting; i++) {
        if (ks[i].is_code || ks[i].key != 27) {
            if (ks[i].is_code && ks[i].key == KEY_MOUSE)
                on_mouse(t);
            else if (!(ks[i].is_code && ks[i].key == KEY_RESIZE))
                bd_app_key(app, ks[i].key, ks[i].is_code);
            continue;
        }
        if (i + 1 >= n || ks[i + 1].is_code || ks[i + 1].key == 27) {
            bd_app_key(app, 27, false); /* Esc on its own (or Esc Esc: each counts) */
            continue;
        }
        int intro = ks[i + 1].key;
        if (intro == '[' || intro == 'O') {
            char params[16];
            size_t np = 0, j = i + 2;
            while (j < n && !ks[j].is_code && ks[j].key >= 0x20 && ks[j].key <= 0x3f) {
                if (np + 1 < sizeof(params))
                    params[np++] = (char)ks[j].key;
                j++;
            }
            params[np] = '\0';
            if (j < n && !ks[j].is_code && ks[j].key >= 0x40 && ks[j].key <= 0x7e) {
                int k = csi_key((char)intro, params, (char)ks[j].key);
                if (k)
                    bd_app_key(app, k, true);
                i = j;
            } else {
                i = j - 1; /* cut short: drop what came */
            }
            continue;
        }
        i++; /* Alt-<key>: nothing is bound to it */
    }
}

static void on_input(uv_poll_t *h, int status, int events)
{
    tui *t = h->data;
    bd_app *app = &t->app;
    uint64_t t0 = now_ns();
    if (status < 0 || (events & UV_DISCONNECT)) {
        really_quit(t, 4);
        return;
    }
    bool any = false;
    raw_key ks[512];
    size_t nk = 0;
    for (int i = 0; i < 4096 && !app->quitting; i++) {
        wint_t ch = 0;
        untouchwin(app->input); /* never let wget_wch refresh anything */
        int r = wget_wch(app->input, &ch);
        if (r == ERR)
            break;
        any = true;
        ks[nk].key = (int)ch;
        ks[nk].is_code = r == KEY_CODE_YES;
        /* A resize is queued by our own resizeterm (SIGWINCH): already handled. */
        if (!(ks[nk].is_code && ch == KEY_RESIZE))
            nk++;
        if (nk == sizeof(ks) / sizeof(ks[0])) {
            dispatch_keys(t, ks, nk);
            nk = 0;
        }
    }
    dispatch_keys(t, ks, nk);
    if (app->quitting)
        return;
    if (!any) {
        /* Readable but nothing to read, again and again: the terminal is gone. */
        int avail = 0;
        if (ioctl(0, FIONREAD, &avail) == 0 && avail == 0 && ++t->empty_reads > 8)
            really_quit(t, 4);
        return;
    }
    t->empty_reads = 0;
    if (!t->key_ns)
        t->key_ns = t0;
    render_now(t);
}

static void on_tick(uv_timer_t *h)
{
    tui *t = h->data;
    bd_app *app = &t->app;
    bool moving = bd_desk_busy(app);
    if (moving) {
        app->spin++;
        bd_app_invalidate(app, BD_DIRTY_HEADER);
        if (app->top && app->top->ops->event) {
            bd_event ev = {.kind = BD_EV_TICK, .tc_index = SIZE_MAX, .case_index = SIZE_MAX};
            app->top->ops->event(app->top, &ev);
        }
    }
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    if (tm.tm_min != t->last_minute) {
        t->last_minute = tm.tm_min;
        bd_app_invalidate(app, BD_DIRTY_HEADER);
    }
    if (!moving && t->tick_ms != TICK_SLOW_MS) {
        t->tick_ms = TICK_SLOW_MS;
        uv_timer_start(&t->tick_timer, on_tick, TICK_SLOW_MS, TICK_SLOW_MS);
    }
    if (!moving && t->exit_after && strcmp(t->exit_after, "loaded") == 0 && t->frames)
        bd_app_quit(app, 0);
}

static void animate(bd_app *app)
{
    tui *t = app->priv;
    if (app->quitting || t->tick_ms == TICK_FAST_MS || !t->tick_timer.data)
        return;
    t->tick_ms = TICK_FAST_MS;
    uv_timer_start(&t->tick_timer, on_tick, TICK_FAST_MS, TICK_FAST_MS);
}

static void on_signal(uv_signal_t *h, int signum)
{
    tui *t = h->data;
    switch (signum) {
    case SIGWINCH:
        if (t->curses_on)
            do_resize(t);
        break;
    case SIGINT:
        bd_app_quit(&t->app, 130);
        break;
    case SIGTERM:
        really_quit(t, 143);
        break;
    case SIGHUP:
        really_quit(t, 129);
        break;
    case SIGTSTP:
        suspend(&t->app);
        break;
    default:
        break;
    }
}

static void suspend(bd_app *app)
{
    tui *t = app->priv;
    /* Give the terminal back as the shell expects it, stop, and take it again. Only this
     * process stops: children (a run's, GnuPG's) go on, and the loop catches up. */
    if (!t->curses_on || app->quitting)
        return;
    endwin();
    if (saved_fl >= 0)
        fcntl(0, F_SETFL, saved_fl);
    term_active = 0;
    kill(getpid(), SIGSTOP);
    fcntl(0, F_SETFL, saved_fl | O_NONBLOCK);
    term_active = 1;
    do_resize(t);
}

/* What runs in the foreground: the pager on a text, or the editor on a file. */
typedef struct fg_call {
    const char *text, *name, *path;
    size_t len;
} fg_call;

/* Give the terminal to a program in the foreground and take it back however it ends. */
static int in_foreground(bd_app *app, const fg_call *c, bd_err *err)
{
    tui *t = app->priv;
    if (!t->curses_on || app->quitting)
        return 0;
    def_prog_mode();
    endwin();
    if (saved_fl >= 0)
        fcntl(0, F_SETFL, saved_fl); /* the program reads a blocking terminal */
    term_active = 0;
    int rc = c->path ? bd_editor_run(c->path, err) : bd_viewer_run(c->text, c->len, c->name, err);
    fcntl(0, F_SETFL, saved_fl | O_NONBLOCK);
    term_active = 1;
    reset_prog_mode();
    do_resize(t);
    return rc;
}

static int foreground_viewer(bd_app *app, const char *text, size_t len, const char *name,
                             bd_err *err)
{
    fg_call c = {text, name, NULL, len};
    return in_foreground(app, &c, err);
}

static int foreground_editor(bd_app *app, const char *path, bd_err *err)
{
    fg_call c = {NULL, NULL, path, 0};
    return in_foreground(app, &c, err);
}

/* ---- start-up -------------------------------------------------------------------------- */

static int fail(const bd_err *err)
{
    fflush(stdout);
    char *msg = bd_text_vis(bd_tui_err_text(err), 0); /* it may quote bench text */
    fprintf(stderr, "benchdesk: %s: %s\n", bd_code_str(err->code), msg ? msg : "");
    free(msg);
    int s = bd_code_exit(err->code);
    return s ? s : 4;
}

static int start_curses(tui *t, bd_err *err)
{
    bd_app *app = &t->app;
    have_tio = tcgetattr(0, &saved_tio) == 0;
    saved_fl = fcntl(0, F_GETFL);
    /* Ask terminfo first: newterm on an unknown type fails after allocating its screen. */
    int tierr = 0;
    if (setupterm(NULL, 1, &tierr) == OK)
        del_curterm(cur_term);
    else
        tierr = -2;
    if (tierr != -2)
        t->screen = newterm(NULL, stdout, stdin);
    if (!t->screen) {
        const char *term = getenv("TERM");
        return bd_err_set(err, BD_E_IO, NULL, 0, 0,
                          "cannot drive terminal type '%s'; set TERM to one terminfo knows "
                          "(e.g. xterm-256color)",
                          term ? term : "(unset)");
    }
    set_term(t->screen);
    t->curses_on = true;
    prepare_restore();
    term_active = 1;
    /* Raw, not cbreak: Ctrl-C and Ctrl-Z come in as keys, so the terminal never signals
     * our whole process group (GnuPG's gpg, a run's exec server) behind the loop's back;
     * they go through the same clean quit and suspend paths. SIGINT and SIGTSTP sent by
     * kill still arrive through uv_signal. */
    raw();
    noecho();
    nonl();
    set_escdelay(25);
    curs_set(0);
    bd_theme_apply(&app->theme);
    mouseinterval(0); /* clicks as presses: no wait to tell clicks from drags */
    mousemask(BUTTON1_PRESSED | BUTTON4_PRESSED
#ifdef BUTTON5_PRESSED
                  | BUTTON5_PRESSED
#endif
              ,
              NULL);
    app->input = newwin(1, 1, 0, 0);
    if (!app->input)
        return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory setting up the terminal");
    keypad(app->input, TRUE);
    nodelay(app->input, TRUE);
    untouchwin(app->input);
    layout(t);
    return 0;
}

static int start_loop(tui *t, bd_err *err)
{
    static const int sigs[5] = {SIGWINCH, SIGINT, SIGTERM, SIGHUP, SIGTSTP};
    int rc;
    if ((rc = uv_poll_init(&t->loop, &t->input, 0)) != 0)
        goto uv_fail;
    t->input.data = t;
    if ((rc = uv_poll_start(&t->input, UV_READABLE | UV_DISCONNECT, on_input)) != 0)
        goto uv_fail;
    for (int i = 0; i < 5; i++) {
        if ((rc = uv_signal_init(&t->loop, &t->sigs[i])) != 0)
            goto uv_fail;
        t->sigs[i].data = t;
        if ((rc = uv_signal_start(&t->sigs[i], on_signal, sigs[i])) != 0)
            goto uv_fail;
    }
    if ((rc = uv_timer_init(&t->loop, &t->render_timer)) != 0)
        goto uv_fail;
    t->render_timer.data = t;
    if ((rc = uv_timer_init(&t->loop, &t->tick_timer)) != 0)
        goto uv_fail;
    t->tick_timer.data = t;
    t->tick_ms = TICK_SLOW_MS;
    if ((rc = uv_timer_start(&t->tick_timer, on_tick, TICK_SLOW_MS, TICK_SLOW_MS)) != 0)
        goto uv_fail;
    return 0;
uv_fail:
    return bd_err_set(err, BD_E_IO, NULL, 0, 0, "cannot set up the event loop: %s",
                      uv_strerror(rc));
}

static void close_leftover(uv_handle_t *h, void *arg)
{
    (void)arg;
    if (!uv_is_closing(h))
        uv_close(h, NULL);
}

static int lat_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* BENCHDESK_TUI_STATS=<file>: what the benchmark in tests/perf/ reads. */
static void write_stats(tui *t)
{
    if (!t->stats_path)
        return;
    FILE *f = fopen(t->stats_path, "we");
    if (!f)
        return;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    fprintf(f, "first_draw_ms=%.1f\n", t->first_draw_ms);
    fprintf(f, "total_ms=%.1f\n", (double)(now_ns() - t->app.start_ns) / 1e6);
    fprintf(f, "max_rss_kb=%ld\n", ru.ru_maxrss);
    fprintf(f, "frames=%zu\n", t->frames);
    fprintf(f, "keys=%zu\n", t->n_lat);
    if (t->n_lat) {
        qsort(t->lat, t->n_lat, sizeof(*t->lat), lat_cmp);
        fprintf(f, "key_latency_p50_ms=%.2f\n", t->lat[t->n_lat / 2]);
        fprintf(f, "key_latency_p95_ms=%.2f\n", t->lat[(t->n_lat * 95) / 100]);
        fprintf(f, "key_latency_max_ms=%.2f\n", t->lat[t->n_lat - 1]);
    }
    fclose(f);
}

int bd_tui_main(const bd_tui_opts *opts)
{
    int status = 0;
    bd_err err = BD_ERR_INIT;
    char *root = NULL, *cwd = NULL;
    bool loop_ready = false;
    tui *t = calloc(1, sizeof(*t));
    if (!t) {
        bd_err_set(&err, BD_E_NOMEM, NULL, 0, 0, "out of memory starting the TUI");
        return fail(&err);
    }
    bd_app *app = &t->app;
    app->priv = t;
    app->start_ns = now_ns();
    app->ops.schedule_render = schedule_render;
    app->ops.animate = animate;
    app->ops.leave = leave;
    app->ops.suspend = suspend;
    app->ops.foreground_viewer = foreground_viewer;
    app->ops.foreground_editor = foreground_editor;
    app->ops.redraw_all = redraw_all;
    bd_desk_install(app);
    t->first_draw_ms = -1;
    t->last_minute = -1;
    setlocale(LC_ALL, "");
    bd_glyphs_pick();

    t->stats_path = getenv("BENCHDESK_TUI_STATS");
    t->exit_after = getenv("BENCHDESK_TUI_EXIT_AFTER");
    if (t->stats_path && !(t->lat = calloc(MAX_LATENCIES, sizeof(*t->lat))))
        t->stats_path = NULL;

    const char *start = opts->dir;
    if (!start && !(start = cwd = getcwd(NULL, 0))) {
        bd_err_errno(&err, BD_E_IO, errno, NULL, "cannot read the working directory");
        status = fail(&err);
        goto out;
    }
    if (bd_bench_find_root(&root, start, opts->dir != NULL, &err) < 0 ||
        bd_bench_open(&app->bench, root, &err) < 0) {
        status = fail(&err);
        goto out;
    }
    if (bd_config_load(&app->config, app->bench->root, &err) < 0) {
        status = fail(&err);
        goto out;
    }
    /* --theme, then the config, then NO_COLOR, then the default. */
    const char *theme = opts->theme         ? opts->theme
                        : app->config.theme ? app->config.theme
                        : opts->no_color    ? "monochrome"
                                            : "default";
    if (bd_theme_load(&app->theme, theme, &err) < 0) {
        status = fail(&err);
        goto out;
    }
    /* Settings are checked first, so a bad --theme says so even without a terminal. */
    if (!isatty(0) || !isatty(1)) {
        bd_err_set(&err, BD_E_USAGE, NULL, 0, 0,
                   "the TUI needs a terminal on stdin and stdout; for scripts use a command "
                   "(see `benchdesk --help`)");
        status = fail(&err);
        goto out;
    }
    bd_git_head_label(app->bench->root, app->branch, sizeof(app->branch));

    if (uv_loop_init(&t->loop) != 0) {
        bd_err_set(&err, BD_E_IO, NULL, 0, 0, "cannot create the event loop");
        status = fail(&err);
        goto out;
    }
    loop_ready = true;
    app->loop = &t->loop;
    /* GnuPG before any thread exists (docs/architecture.md); a failure is shown by the model. */
    bd_err gpg_err = BD_ERR_INIT;
    bd_provenance_init(&gpg_err);
    /* The namespaces probe clones this process: only while it has one thread (exec.h). */
    bd_isolation_probe_early();
    install_crash_handlers();
    if (start_curses(t, &err) < 0 || start_loop(t, &err) < 0 || bd_desk_start(app, &err) < 0) {
        t->fatal = err;
        really_quit(t, bd_code_exit(err.code) ? bd_code_exit(err.code) : 4);
    } else {
        app->watch = bd_watch_start(app); /* changes made outside (NULL: Ctrl-R still) */
        render_now(t);
    }
    uv_run(&t->loop, UV_RUN_DEFAULT);
    status = app->exit_status;
    restore_terminal(t);
    remove_crash_handlers();
    bd_desk_close(app); /* views, the run (its handles live on the loop, closed below), model */
    free_windows(app);
    if (app->input)
        delwin(app->input);
    if (t->screen)
        delscreen(t->screen);
    if (t->fatal.code != BD_OK)
        status = fail(&t->fatal);
out:
    if (loop_ready) {
        /* Handles that never started (a failed start-up) still need closing. */
        uv_walk(&t->loop, close_leftover, NULL);
        uv_run(&t->loop, UV_RUN_DEFAULT);
        uv_loop_close(&t->loop);
    }
    write_stats(t);
    bd_config_release(&app->config);
    bd_bench_free(app->bench);
    free(root);
    free(cwd);
    free(t->lat);
    free(t);
    return status;
}
