/*
 * exec_supervisor.c — `benchdesk-supervisor`, the small program a warm server's spare
 * executes (docs/runner.md#how-a-warm-case-runs). The warm server's vfork child clones the
 * case's prepared init (a copy of the warm interpreter, the rubric's ancestor) and then
 * executes this program, so the supervisor is no copy of the interpreter: it is the exec
 * server's supervisor (this file builds exec_server.c as benchdesk's own exec server does)
 * that takes the prepared init over and serves one request.
 *
 *   benchdesk-supervisor v1 <server pid> <init pid> <as root 0|1> <case uid> <temp root> --
 *       <the command line the init was prepared for>
 *
 * with fd 4 the init's socket, 5 its report pipe, 6 the jail's sync pipe (write end) and 7
 * the server's socket, the signal mask and session of a spare. A request the prepared init
 * cannot serve, or an init that died, takes the supervisor's ordinary way: the program is
 * then started by execve, as a cold start's is.
 */
#include "exec_server.c"

/* A decimal in [1, max], or 0. */
static unsigned long arg_num(const char *s, unsigned long max)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    return s[0] >= '0' && s[0] <= '9' && *end == '\0' && errno == 0 && v <= max ? v : 0;
}

int main(int argc, char **argv)
{
    if (argc < 9 || strcmp(argv[1], "v1") != 0 || strcmp(argv[7], "--") != 0)
        return 2;
    pid_t server = (pid_t)arg_num(argv[2], INT_MAX);
    pid_t init = (pid_t)arg_num(argv[3], INT_MAX);
    bool as_root = strcmp(argv[4], "1") == 0;
    uid_t uid = (uid_t)arg_num(argv[5], UINT32_MAX - 1);
    if (server <= 0 || init <= 0 || (!as_root && strcmp(argv[4], "0") != 0) ||
        (uid == 0 && strcmp(argv[5], "0") != 0) || argv[6][0] != '/')
        return 2;
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0 || getppid() != server)
        _exit(0);
    /* The jail as the server prepared it, with the same identity. */
    bd_jail_set_case_identity(as_root, uid, argv[6]);
    bd_jail_set_host_network(false);
    bd_jail_adopt_ahead(6);
    the_prep = (prepared){init, 4, 5, (const char *const *)argv + 8, NULL, 0, {-1, -1}};
    bd_err jerr = BD_ERR_INIT;
    if (bd_jail_parent(init, &jerr) == 0)
        setpgid(init, init);
    else
        prepared_discard(false); /* the request takes the ordinary way */
    size_t cap = sizeof(req_hdr) + REQ_STRINGS_MAX;
    char *buf = malloc(cap);
    if (!buf) {
        prepared_discard(false);
        _exit(0);
    }
    spare_serve(7, server, buf, cap);
}
