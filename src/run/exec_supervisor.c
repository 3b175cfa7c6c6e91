/*
 * exec_supervisor.c — `benchdesk-supervisor`, the small program a warm server's spare
 * executes (docs/runner.md#how-a-warm-case-runs). The warm server's vfork child clones the
 * case's prepared init (which forks the rubric's process and executes this program too,
 * below) and then executes this program, so the supervisor is no copy of the interpreter:
 * it is the exec server's supervisor (this file builds exec_server.c as benchdesk's own
 * exec server does) that takes the prepared init over and serves one request.
 *
 *   benchdesk-supervisor v1 <server pid> <init pid> <as root 0|1> <case uid> <temp root>
 *       <seccomp filter> -- <the command line the init was prepared for>
 *
 * where the filter is the one the server compiled, as bd_jail_filter_hex writes it ("-"
 * for none): the program compiles none (jail_seccomp_handed.c), so it links no libseccomp
 * and can be built against a small C library
 * (docs/runner.md#the-supervisor-program-on-a-small-c-library). Only the ordinary way
 * below loads it.
 *
 * with fd 4 the init's socket, 5 its report pipe, 6 the jail's sync pipe (write end) and 7
 * the server's socket, the signal mask and session of a spare. A request the prepared init
 * cannot serve, or an init that died, takes the supervisor's ordinary way: the program is
 * then started by execve, as a cold start's is.
 *
 * The prepared init is this program too, executed by the init the vfork child cloned
 * (sharing the server's memory) once it forked the rubric's process:
 *
 *   benchdesk-supervisor init1 <as root 0|1> <case uid> <temp root> <rubric pid> --
 *       <the command line it was prepared for>
 *
 * with fd 3 its socket from the supervisor, 4 its report pipe, 5 the jail's sync pipe (read
 * end) and 6 the rubric's socket: it builds the jail as the prepared init does, and with
 * its case sends the rubric the case and stays behind as its PID 1 (exec_server.c,
 * init_hand_over), so no init is a copy of the interpreter either.
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

/* `benchdesk-supervisor init1 ...`: the case's init (see the top of this file). */
static int init_main(int argc, char **argv)
{
    if (argc < 8 || strcmp(argv[6], "--") != 0)
        return 127;
    bool as_root = strcmp(argv[2], "1") == 0;
    uid_t uid = (uid_t)arg_num(argv[3], UINT32_MAX - 1);
    pid_t rubric = (pid_t)arg_num(argv[5], INT_MAX);
    if ((!as_root && strcmp(argv[2], "0") != 0) || (uid == 0 && strcmp(argv[3], "0") != 0) ||
        argv[4][0] != '/' || rubric <= 0)
        return 127;
    bd_jail_set_case_identity(as_root, uid, argv[4]);
    bd_jail_set_host_network(false);
    bd_err jerr = BD_ERR_INIT;
    size_t cap = sizeof(req_hdr) + REQ_STRINGS_MAX;
    char *buf = malloc(cap);
    if (!buf || bd_jail_adopt_init(5, (const char *const *)argv + 7, &jerr) != 0)
        return 127; /* the namespace, and the rubric in it, end with this process */
    prepared_init(3, 4, buf, cap, rubric, 6);
}

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "init1") == 0)
        return init_main(argc, argv);
    if (argc < 10 || strcmp(argv[1], "v1") != 0 || strcmp(argv[8], "--") != 0)
        return 2;
    if (strcmp(argv[7], "-") != 0 && bd_jail_filter_from_hex(argv[7]) != 0)
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
    the_prep = (prepared){init, 4, 5, (const char *const *)argv + 9, NULL, 0, {-1, -1}};
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
