/**
 * The watchdog: one small process per owner that outlives a SIGKILL of it and then ends the
 * process groups of the servers that carry its mark, so that no server outlives its owner even
 * when no Toolvisor starts again to sweep them. It is a POSIX `sh` script, not a Node process:
 * idle, it is one shell blocked on a read (1.6 MB resident with dash, against some 45 MB for a
 * Node process; it starts in about 2 ms), and its text lives in this module, so sources, `dist`
 * and the CLI bundle carry it with nothing to ship or locate. Its stdin is a pipe that only the owner holds and never writes
 * to: the end of it means the owner is gone, however it died (`PR_SET_PDEATHSIG` would take a
 * native wrapper per server and reach only the server, not its group).
 *
 * It kills only what it can prove is the owner's: a process whose environment holds the owner's
 * exact mark (pid and start time), found again with the same start time right before each signal
 * (a pid freed and reused meanwhile is another process), in a group that one of them leads or
 * whose leader is gone. Bounded: SIGCONT and SIGTERM, `grace` for them to exit, SIGKILL, up to 2 s
 * for them to be gone, exit.
 */
import * as NodeChildProcess from "node:child_process"
import type * as NodeStream from "node:stream"

/** What a watchdog watches: whose servers, by which mark, and how long they get for SIGTERM. */
export interface Options {
  /** The environment variable that holds owner marks. */
  readonly key: string
  /** The owner's mark, `<pid>/<start time>`. */
  readonly owner: string
  readonly graceMillis: number
  /** Its environment: the caller's, without marks, so that no sweep takes the watchdog for a server. */
  readonly env: NodeJS.ProcessEnv
}

/**
 * `$1` the mark's variable, `$2` the owner's mark, `$3` tenths of a second between SIGTERM and
 * SIGKILL. A `/proc/<pid>/stat` is read whole, as one line, because a command name may hold a
 * newline; its fields start after the last ") ".
 */
export const script = `# toolvisor-watchdog: ends a Toolvisor's servers once that Toolvisor is gone, even by SIGKILL.
key=$1 owner=$2 grace=$3
owner_pid=\${owner%/*} owner_start=\${owner#*/}
trap '' PIPE
while read -r _; do :; done

# Sets state, pgrp and start for process $1; fails if it is gone or a zombie.
look() {
  s=
  { while IFS= read -r line; do s="$s$line "; done < "/proc/$1/stat"; } 2>/dev/null
  set -f
  set -- \${s##*") "}
  set +f
  state=$1 pgrp=$3 start=\${20}
  case $pgrp$start in '' | *[!0-9]*) return 1 ;; esac
  [ "$state" != Z ]
}

# An owner that still runs closed the pipe itself (a worker thread that ended): it keeps its servers.
n=0
while look "$owner_pid" && [ "$start" = "$owner_start" ]; do
  [ $n -ge 20 ] && exit 0
  n=$((n + 1))
  sleep 0.05
done

# Every live process with the owner's mark, as pid:start. Only this user's processes that started
# after the owner can have it. One grep reads them all where grep has -z (GNU grep has), else one
# tr | grep each; either way an entry is a whole NUL-terminated string: a value cannot forge one.
cd /proc || exit 1
found= files=
for pid in [0-9]*; do
  [ -O "$pid/environ" ] && look "$pid" && [ "$start" -ge "$owner_start" ] || continue
  found="$found $pid:$start" files="$files $pid/environ"
done
marked=
if [ -z "$found" ]; then
  exit 0
elif printf 'x\\000' | grep -qzxF x 2>/dev/null; then
  for file in $(grep -lzxF -e "$key=$owner" $files 2>/dev/null); do
    pid=\${file%/environ}
    rest=\${found#* "$pid":}
    marked="$marked $pid:\${rest%% *}"
  done
else
  for m in $found; do
    tr '\\n\\000' '\\001\\n' 2>/dev/null < "\${m%:*}/environ" | grep -qxF "$key=$owner" && marked="$marked $m"
  done
fi

# Sets group for marked process $1 if it still runs as the same process, in a group that a marked
# process leads or whose leader is gone.
ours() {
  look "\${1%:*}" && [ "$start" = "\${1#*:}" ] && [ "$pgrp" -gt 1 ] || return 1
  group=$pgrp
  look "$group" || return 0
  case " $marked " in *" $group:$start "*) return 0 ;; esac
  return 1
}

# Sends signal $1 to the group of each marked process that is still ours; fails if none is.
signal() {
  groups=
  for m in $marked; do
    ours "$m" || continue
    case " $groups " in *" $group "*) continue ;; esac
    groups="$groups $group"
    # A stopped process acts on SIGTERM only once continued (SIGKILL ends it either way).
    [ "$1" = TERM ] && kill -CONT -"$group" 2>/dev/null
    kill -"$1" -"$group" 2>/dev/null
  done
  [ -n "$groups" ]
}

# Waits up to $1 tenths of a second while a marked process is still ours.
await_gone() {
  n=0
  while [ $n -lt "$1" ] && signal 0; do
    n=$((n + 1))
    sleep 0.1
  done
}

signal TERM || exit 0
ended=$groups
await_gone "$grace"
signal KILL && await_gone 20
echo "toolvisor-watchdog: the Toolvisor with pid $owner_pid is gone; ended its servers' process groups:$ended" >&2
`

/** The shell that runs the script: POSIX says where it is on Linux. */
export const shell = "/bin/sh"

/** The shell's arguments: the script, the name it runs as (`$0`), then its own. */
export const args = (options: Omit<Options, "env">): ReadonlyArray<string> => [
  "-c",
  script,
  "toolvisor-watchdog",
  options.key,
  options.owner,
  String(Math.max(0, Math.round(options.graceMillis / 100)))
]

/**
 * Starts a watchdog whose pipe this process holds. It leads a session of its own (a Ctrl-C meant
 * for this process does not reach it) and keeps nothing alive here: this process may exit, which
 * is when it acts. Its stderr is this process's, for its one line after it ended something.
 */
export const start = (options: Options): NodeChildProcess.ChildProcessByStdio<NodeStream.Writable, null, null> => {
  const child = NodeChildProcess.spawn(shell, args(options), {
    argv0: "toolvisor-watchdog",
    detached: true,
    env: options.env,
    stdio: ["pipe", "ignore", "inherit"]
  })
  child.unref()
  // Nothing is ever written; an error on the pipe only says the watchdog is gone.
  child.stdin.on("error", () => {})
  return child
}
