# bash completion for benchdesk                                      -*- shell-script -*-
#
# Completes subcommands, their options and option values, and, from the bench in use
# (-C DIR on the line, else the nearest ancestor of the working directory holding a
# bench/ folder), task-class names, case ids, case and task-class directories (sign) and
# run ids (compare, report, history log --run; read from `benchdesk history log --json`).
# Self-contained: works with or without the bash-completion package; needs bash 4.4 or
# later (mapfile -d, local -).
#
# Nothing read from the bench or the history is ever evaluated (docs/security.md, "Bash
# completion"): folder names are listed by `find -print0` and run ids read from the JSON
# through mapfile, only names matching the bench's id patterns are offered, and they are
# matched against the word being completed by a plain prefix test in a loop -- no
# `compgen -W` over bench data, no unquoted expansion, no eval.
#
# tests/cli/test_completion.sh checks every command of `benchdesk --help` and every
# option of `benchdesk CMD --help` against the tables below: a command or an option
# added without its completion fails that test.

# The id patterns (docs/formats.md, docs/history.md): task-class names and case ids, run
# ids. The letters are spelled out: a range like a-z may take in others in some locales.
_benchdesk_name_re='^[abcdefghijklmnopqrstuvwxyz0123456789][abcdefghijklmnopqrstuvwxyz0123456789._-]{0,127}$'
_benchdesk_run_re='^[ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789][ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:-]{0,127}$'
# How many of the newest history records the run ids are read from.
_benchdesk_run_records=500

# Options per command (the global ones come first).
_benchdesk_global_opts="-C --theme --version -h --help"
declare -gA _benchdesk_opts=(
    [list]="--json --help"
    [verify]="--full --json --help"
    [digest]="--json --help"
    [pin]="--json --help"
    [migrate]="--json --help"
    [case]="--json --help"
    [run]="--case --jobs --json --drafts --isolation --allow-weaker-isolation --start --shard --run-id --out --stale --junit --cost-cap --operator-key --help"
    [record]="--unsafe-network --isolation --allow-weaker-isolation --yes --json --help"
    [history]="--task-class --case --run --failure-mode --failed --stale --verdict --unreviewed --trend --full --limit --before --partial --json --help"
    [compare]="--task-class --fail-on-regression --json --help"
    [report]="--format -o --output --json --help"
    [help]="--help"
    [anchor]="--key --json --help"
    [recommend]="--json --help"
    [promote]="--json --help"
    [sign]="--role --key --replace --json --help"
    [signer]="--roles --json --help"
    [status]="--json --help"
    [stage]="--unstage --json --help"
    [commit]="-m --sign --key --json --help"
    [verdict]="--verdict --note --key --json --help"
    [review]="--run --sample --key --json --help"
    [calibrate]="--json --help"
)
# Subcommand words of the commands that have them.
declare -gA _benchdesk_actions=(
    [case]="new check"
    [signer]="add"
    [history]="verify log import"
    [anchor]="publish verify"
)
# Options that take a value (the next word is not a positional argument).
_benchdesk_valued=" -C --theme --case --jobs --cost-cap --isolation --start --task-class --run --failure-mode --limit --before --key --role --roles -m --shard --run-id --out --junit --operator-key --format -o --output --verdict --note --sample "

# The bench root: -C DIR from the line, else the nearest ancestor with a bench/ folder.
_benchdesk_root()
{
    local i d=""
    for ((i = 1; i < COMP_CWORD; i++)); do
        if [[ ${COMP_WORDS[i]} == -C ]]; then
            d=${COMP_WORDS[i + 1]}
            d=${d/#\~/$HOME}
        fi
    done
    if [[ -n $d ]]; then
        [[ -d $d/bench ]] && printf '%s\n' "$d"
        return
    fi
    d=$PWD
    while [[ -n $d ]]; do
        if [[ -d $d/bench ]]; then
            printf '%s\n' "$d"
            return
        fi
        [[ $d == / ]] && return
        d=$(dirname -- "$d")
    done
}

# The subdirectories of DIR whose names match the id pattern -> names (the caller's
# array). find -print0 and mapfile: a name is never split, globbed or expanded, whatever
# the shell's options.
_benchdesk_subdirs()
{
    local dir=$1 p n
    local -a found=()
    names=()
    [[ $dir == /* ]] || dir=./$dir
    [[ -d $dir ]] || return
    mapfile -t -d '' found < <(find -H "$dir" -mindepth 1 -maxdepth 1 -type d -print0 2>/dev/null)
    for p in "${found[@]}"; do
        n=${p##*/}
        [[ $n =~ $_benchdesk_name_re ]] && names+=("$n")
    done
}

# Task-class names -> names: the folders of bench/ holding a registration.yaml.
_benchdesk_task_classes()
{
    local root n
    local -a all=()
    names=()
    root=$(_benchdesk_root)
    [[ -n $root ]] || return
    _benchdesk_subdirs "$root/bench"
    all=("${names[@]}")
    names=()
    for n in "${all[@]}"; do
        [[ -f $root/bench/$n/registration.yaml ]] && names+=("$n")
    done
}

# Case ids of task class $1 -> names: the folders of bench/TC/cases/.
_benchdesk_case_ids()
{
    local root
    names=()
    [[ $1 =~ $_benchdesk_name_re ]] || return
    root=$(_benchdesk_root)
    [[ -n $root ]] || return
    _benchdesk_subdirs "$root/bench/$1/cases"
}

# Run ids -> names, newest first, each once: the run_id fields of the newest records of
# `benchdesk history log --json` (of task class $2 when it is one), run by the command
# being completed ($1). An id that does not match the run-id pattern is dropped.
_benchdesk_run_ids()
{
    local root exe line id
    local -a args=() lines=()
    local -A seen=()
    names=()
    root=$(_benchdesk_root)
    [[ -n $root ]] || return
    exe=${1:-benchdesk}
    exe=$(type -P -- "${exe/#\~\//$HOME/}") || return
    args=(-C "$root" history log --json --limit "$_benchdesk_run_records")
    [[ $2 =~ $_benchdesk_name_re ]] && args+=(--task-class "$2")
    # One JSON line; in it a string's own quotes are escaped, so `"run_id":"` is a key.
    mapfile -t lines < <("$exe" "${args[@]}" </dev/null 2>/dev/null |
        LC_ALL=C grep -oE '"run_id":"[^"]*"')
    for line in "${lines[@]}"; do
        id=${line#\"run_id\":\"}
        id=${id%\"}
        [[ $id =~ $_benchdesk_run_re ]] || continue
        [[ -n ${seen[$id]-} ]] && continue
        seen[$id]=1
        names+=("$id")
    done
}

# Case and task-class directories (sign) -> COMPREPLY, as paths the command resolves:
# from the working directory, or under the DIR of -C DIR, or absolute when the word starts
# with /. Task-class directories first; the cases of one once the word goes below it (or
# the working directory is in it).
_benchdesk_subject_dirs()
{
    local root base="" below="" d i tc id show
    local -a tcs=()
    root=$(_benchdesk_root)
    [[ -n $root ]] || return
    for ((i = 1; i < COMP_CWORD; i++)); do
        [[ ${COMP_WORDS[i]} == -C ]] && base=${COMP_WORDS[i + 1]%/}/
    done
    if [[ $cur == /* ]]; then
        base=$(CDPATH='' cd -- "$root" 2>/dev/null && pwd) || return
        base=${base%/}/
    elif [[ -z $base ]]; then
        # The bench root is the working directory or one of its ancestors: below is the
        # way down from the root to here.
        d=$PWD
        while [[ $d != "$root" && $d != / ]]; do
            below=${d##*/}/$below
            d=$(dirname -- "$d")
        done
        [[ $d == "$root" ]] || return
    fi
    _benchdesk_task_classes
    tcs=("${names[@]}")
    for tc in "${tcs[@]}"; do
        _benchdesk_show "bench/$tc"
        [[ $show == "$cur"* ]] && COMPREPLY+=("$show")
        if [[ $cur == "$show"/* || $below == bench/"$tc"/* ]]; then
            _benchdesk_case_ids "$tc"
            for id in "${names[@]}"; do
                _benchdesk_show "bench/$tc/cases/$id"
                [[ $show == "$cur"* ]] && COMPREPLY+=("$show")
            done
        fi
    done
}

# REL (a path from the bench root) -> show: the path offered for it. base and below are
# _benchdesk_subject_dirs's: with below (the working directory, from the bench root) the
# path is relative to the working directory, else it is base followed by REL.
_benchdesk_show()
{
    local from=$below to=$1/ first
    if [[ -z $below ]]; then
        show=$base$1
        return
    fi
    while [[ -n $from ]]; do
        first=${from%%/*}
        [[ $to == "$first"/* ]] || break
        from=${from#*/}
        to=${to#*/}
    done
    show=""
    while [[ -n $from ]]; do
        show+=../
        from=${from#*/}
    done
    show+=$to
    show=${show%/}
    [[ -n $show ]] || show=.
}

# WORDS... -> COMPREPLY: those that start with $cur (a plain prefix test, nothing is
# expanded).
_benchdesk_add()
{
    local w
    for w in "$@"; do
        [[ $w == "$cur"* ]] && COMPREPLY+=("$w")
    done
}

# Run ids -> COMPREPLY: those that start with the word being completed. Readline breaks
# words at ':' (COMP_WORDBREAKS) and a run id may hold one: the word is put back together
# from its pieces and what precedes its last ':' is left off the completions.
_benchdesk_add_runs()
{
    local word=$cur i=$COMP_CWORD w
    if [[ $COMP_WORDBREAKS == *:* ]]; then
        while ((i > 1)) && [[ ${COMP_WORDS[i]} == : || ${COMP_WORDS[i - 1]} == : ]]; do
            word=${COMP_WORDS[i - 1]}$word
            ((i--))
        done
    fi
    for w in "$@"; do
        [[ $w == "$word"* ]] || continue
        [[ $word == *:* && $COMP_WORDBREAKS == *:* ]] && w=${w#"${word%:*}:"}
        COMPREPLY+=("$w")
    done
}

# Directories -> COMPREPLY (bash's own file-name completion, one name a line).
_benchdesk_dirs()
{
    compopt -o filenames 2>/dev/null
    mapfile -t COMPREPLY < <(compgen -d -- "$cur")
}

_benchdesk()
{
    # The user's shell options must not change what is offered: no nounset, and a case-
    # sensitive [[ ]] (nocasematch would let the id patterns take in capitals).
    local -
    set +u
    local nocase=""
    shopt -q nocasematch && nocase=1 && shopt -u nocasematch
    _benchdesk_complete "$@"
    [[ -n $nocase ]] && shopt -s nocasematch
    return 0
}

_benchdesk_complete()
{
    local IFS=$' \t\n'
    local cur prev cmd="" action="" tc="" ctc="" i w npos=0 ws=$COMP_CWORD colon=""
    local -a names=() words=()
    cur=${COMP_WORDS[COMP_CWORD]}
    prev=${COMP_WORDS[COMP_CWORD - 1]}
    COMPREPLY=()

    # A run id holding ':' comes as pieces (readline breaks words there): ws is where the
    # word being completed starts, and the pieces of earlier words are not counted.
    [[ $COMP_WORDBREAKS == *:* ]] && colon=1
    while [[ -n $colon ]] && ((ws > 1)) &&
        [[ ${COMP_WORDS[ws]} == : || ${COMP_WORDS[ws - 1]} == : ]]; do
        ((ws--))
    done

    # The command, its action word, its first positional (a task class for most) and how
    # many positionals come before the word being completed.
    for ((i = 1; i < ws; i++)); do
        w=${COMP_WORDS[i]}
        if [[ $_benchdesk_valued == *" $w "* ]]; then
            [[ $w == --task-class ]] && ctc=${COMP_WORDS[i + 1]}
            ((i++))
            continue
        fi
        [[ $w == -* ]] && continue
        [[ -n $colon && ($w == : || ${COMP_WORDS[i - 1]} == :) ]] && continue
        if [[ -z $cmd ]]; then
            cmd=$w
        elif [[ -n ${_benchdesk_actions[$cmd]} && -z $action ]]; then
            action=$w
        else
            ((npos++ == 0)) && tc=$w
        fi
    done

    # Values of options.
    if [[ ${COMP_WORDS[ws - 1]} == --run && $cmd == history ]]; then
        _benchdesk_run_ids "$1" "$ctc"
        _benchdesk_add_runs "${names[@]}"
        return
    fi
    case $prev in
    -C)
        _benchdesk_dirs
        return
        ;;
    --theme)
        _benchdesk_add default light high-contrast monochrome
        return
        ;;
    --role)
        _benchdesk_add author reviewer
        return
        ;;
    --verdict)
        _benchdesk_add confirmed rubric_bug case_bug flaky infra withdrawn
        return
        ;;
    --note)
        return
        ;;
    --roles)
        _benchdesk_add author reviewer author,reviewer operator
        return
        ;;
    --isolation)
        _benchdesk_add auto namespaces subprocess
        return
        ;;
    --start)
        _benchdesk_add warm cold
        return
        ;;
    --task-class)
        _benchdesk_task_classes
        _benchdesk_add "${names[@]}"
        return
        ;;
    --case)
        # run TC --case ID, history log --task-class TC --case ID
        [[ $cmd == history ]] && tc=$ctc
        _benchdesk_case_ids "$tc"
        _benchdesk_add "${names[@]}"
        return
        ;;
    --shard)
        _benchdesk_add auto
        return
        ;;
    --format)
        _benchdesk_add html markdown junit
        return
        ;;
    --junit | -o | --output)
        compopt -o filenames 2>/dev/null
        mapfile -t COMPREPLY < <(compgen -f -- "$cur")
        return
        ;;
    --out)
        _benchdesk_dirs
        return
        ;;
    --jobs | --cost-cap | --limit | --before | --key | --operator-key | -m | --run-id | --run | --failure-mode)
        return
        ;;
    esac

    if [[ -z $cmd ]]; then
        if [[ $cur == -* ]]; then
            read -ra words <<<"$_benchdesk_global_opts"
            _benchdesk_add "${words[@]}"
        else
            _benchdesk_add "${!_benchdesk_opts[@]}"
        fi
        return
    fi
    if [[ $cur == -* ]]; then
        read -ra words <<<"${_benchdesk_opts[$cmd]-}"
        _benchdesk_add "${words[@]}"
        return
    fi
    if [[ -n ${_benchdesk_actions[$cmd]-} && -z $action ]]; then
        read -ra words <<<"${_benchdesk_actions[$cmd]}"
        _benchdesk_add "${words[@]}"
        return
    fi

    # Positional arguments.
    case $cmd in
    list | run | recommend | review | calibrate | case)
        if ((npos == 0)); then
            _benchdesk_task_classes
            _benchdesk_add "${names[@]}"
        elif [[ $cmd == case && $action == check ]]; then
            _benchdesk_case_ids "$tc"
            _benchdesk_add "${names[@]}"
        fi
        ;;
    verify)
        _benchdesk_task_classes
        _benchdesk_add "${names[@]}"
        ;;
    pin | record)
        if ((npos == 0)); then
            _benchdesk_task_classes
        else
            _benchdesk_case_ids "$tc"
        fi
        _benchdesk_add "${names[@]}"
        ;;
    promote)
        if ((npos == 0)); then
            _benchdesk_task_classes
            _benchdesk_add "${names[@]}"
        elif ((npos == 1)); then
            _benchdesk_add bronze silver gold
        fi
        ;;
    compare)
        # compare [RUN_A] [RUN_B]: run ids (of --task-class TC when given).
        if ((npos < 2)); then
            _benchdesk_run_ids "$1" "$ctc"
            _benchdesk_add_runs "${names[@]}"
        fi
        ;;
    report)
        # report [RUN]: run ids.
        if ((npos == 0)); then
            _benchdesk_run_ids "$1" ""
            _benchdesk_add_runs "${names[@]}"
        fi
        ;;
    help)
        # help [COMMAND]
        ((npos == 0)) && _benchdesk_add "${!_benchdesk_opts[@]}"
        ;;
    history)
        # history import BUNDLE_DIR...
        [[ $action == import ]] && _benchdesk_dirs
        ;;
    sign)
        # sign DIR... (cases and task classes)
        compopt -o filenames 2>/dev/null
        _benchdesk_subject_dirs
        ;;
    digest | stage)
        # A case or task-class directory, a file, a path under bench/ or audit/.
        compopt -o filenames 2>/dev/null
        mapfile -t COMPREPLY < <(compgen -f -- "$cur")
        ;;
    esac
}

complete -F _benchdesk benchdesk
