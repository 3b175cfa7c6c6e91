# bash completion for benchdesk                                      -*- shell-script -*-
#
# Completes subcommands, their options and option values, and, from the bench in use
# (-C DIR on the line, else the nearest ancestor of the working directory holding a
# bench/ folder), task-class names, case ids and case or task-class directories.
# Self-contained: works with or without the bash-completion package.
#
# tests/cli/test_completion.sh checks every command of `benchdesk --help` and every
# option of `benchdesk CMD --help` against the tables below: a command or an option
# added without its completion fails that test.

# Options per command (the global ones come first).
_benchdesk_global_opts="-C --theme --version -h --help"
declare -gA _benchdesk_opts=(
    [list]="--json --help"
    [verify]="--json --help"
    [digest]="--json --help"
    [pin]="--json --help"
    [migrate]="--json --help"
    [case]="--json --help"
    [run]="--case --jobs --json --drafts --isolation --allow-weaker-isolation --shard --run-id --out --help"
    [record]="--unsafe-network --isolation --allow-weaker-isolation --json --help"
    [history]="--task-class --case --run --failure-mode --failed --stale --trend --full --limit --before --partial --json --help"
    [compare]="--task-class --fail-on-regression --json --help"
    [anchor]="--key --json --help"
    [recommend]="--json --help"
    [promote]="--json --help"
    [sign]="--role --key --json --help"
    [status]="--json --help"
    [stage]="--unstage --json --help"
    [commit]="-m --sign --key --json --help"
)
# Subcommand words of the commands that have them.
declare -gA _benchdesk_actions=(
    [case]="new"
    [history]="verify log import"
    [anchor]="publish verify"
)
# Options that take a value (the next word is not a positional argument).
_benchdesk_valued=" -C --theme --case --jobs --isolation --task-class --run --failure-mode --limit --before --key --role -m --shard --run-id --out "

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

# Task-class names: the folders of bench/ holding a registration.yaml.
_benchdesk_task_classes()
{
    local root f
    root=$(_benchdesk_root)
    [[ -n $root ]] || return
    for f in "$root"/bench/*/registration.yaml; do
        [[ -f $f ]] || continue
        f=${f%/registration.yaml}
        printf '%s\n' "${f##*/}"
    done
}

# Case ids of one task class: the folders of bench/TC/cases/.
_benchdesk_case_ids()
{
    local root d
    root=$(_benchdesk_root)
    [[ -n $root && -n $1 && $1 != */* ]] || return
    for d in "$root/bench/$1"/cases/*/; do
        [[ -d $d ]] || continue
        d=${d%/}
        printf '%s\n' "${d##*/}"
    done
}

_benchdesk_add() # words... -> COMPREPLY, those that start with $cur
{
    local IFS=$'\n'
    COMPREPLY+=($(compgen -W "$*" -- "$cur"))
}

_benchdesk()
{
    local cur prev cmd="" action="" tc="" i w npos=0
    cur=${COMP_WORDS[COMP_CWORD]}
    prev=${COMP_WORDS[COMP_CWORD - 1]}
    COMPREPLY=()

    # The command, its action word, its first positional (a task class for most) and how
    # many positionals come before the word being completed.
    for ((i = 1; i < COMP_CWORD; i++)); do
        w=${COMP_WORDS[i]}
        if [[ $_benchdesk_valued == *" $w "* ]]; then
            ((i++))
            continue
        fi
        [[ $w == -* ]] && continue
        if [[ -z $cmd ]]; then
            cmd=$w
        elif [[ -n ${_benchdesk_actions[$cmd]} && -z $action ]]; then
            action=$w
        else
            ((npos++ == 0)) && tc=$w
        fi
    done

    # Values of options.
    case $prev in
    -C)
        COMPREPLY=($(compgen -d -- "$cur"))
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
    --isolation)
        _benchdesk_add auto namespaces subprocess
        return
        ;;
    --task-class)
        _benchdesk_add $(_benchdesk_task_classes)
        return
        ;;
    --case)
        # run TC --case ID, history log --task-class TC --case ID
        if [[ $cmd == history ]]; then
            for ((i = 1; i < COMP_CWORD - 1; i++)); do
                [[ ${COMP_WORDS[i]} == --task-class ]] && tc=${COMP_WORDS[i + 1]}
            done
        fi
        _benchdesk_add $(_benchdesk_case_ids "$tc")
        return
        ;;
    --shard)
        _benchdesk_add auto
        return
        ;;
    --out)
        COMPREPLY=($(compgen -d -- "$cur"))
        return
        ;;
    --jobs | --limit | --before | --key | -m | --run-id)
        return
        ;;
    esac

    if [[ -z $cmd ]]; then
        if [[ $cur == -* ]]; then
            _benchdesk_add $_benchdesk_global_opts
        else
            _benchdesk_add "${!_benchdesk_opts[@]}"
        fi
        return
    fi
    if [[ $cur == -* ]]; then
        _benchdesk_add ${_benchdesk_opts[$cmd]}
        return
    fi
    if [[ -n ${_benchdesk_actions[$cmd]} && -z $action ]]; then
        _benchdesk_add ${_benchdesk_actions[$cmd]}
        return
    fi

    # Positional arguments.
    case $cmd in
    list | run | recommend)
        ((npos == 0)) && _benchdesk_add $(_benchdesk_task_classes)
        ;;
    verify)
        _benchdesk_add $(_benchdesk_task_classes)
        ;;
    pin | record)
        if ((npos == 0)); then
            _benchdesk_add $(_benchdesk_task_classes)
        else
            _benchdesk_add $(_benchdesk_case_ids "$tc")
        fi
        ;;
    case)
        ((npos == 0)) && _benchdesk_add $(_benchdesk_task_classes)
        ;;
    promote)
        if ((npos == 0)); then
            _benchdesk_add $(_benchdesk_task_classes)
        elif ((npos == 1)); then
            _benchdesk_add bronze silver gold
        fi
        ;;
    history)
        # history import BUNDLE_DIR...
        [[ $action == import ]] && COMPREPLY=($(compgen -d -- "$cur"))
        ;;
    digest | sign | stage)
        # A case or task-class directory, a file, a path under bench/ or audit/.
        compopt -o filenames 2>/dev/null
        COMPREPLY=($(compgen -f -- "$cur"))
        ;;
    esac
}

complete -F _benchdesk benchdesk
