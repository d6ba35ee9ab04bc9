//! Reading `/proc`, and the reaper: at start, the process groups an earlier run of the daemon
//! recorded and that are still alive are killed. The supervisor's lifeline normally leaves
//! nothing behind (even a supervisor stopped with SIGSTOP acts: when the daemon dies its group
//! is orphaned, and the kernel sends a stopped orphaned group SIGHUP and SIGCONT). This covers
//! a supervisor killed while the daemon could not act (stopped, or dying itself).
//!
//! Process ids are reused, so a recorded group is killed only when it is certainly the one
//! recorded: its leader (the supervisor) is alive with the start time recorded, or the leader
//! is gone and a member carries the child's marker (`KENNEL_PROCESS`, a value of its own) in
//! its environment. Rows a daemon still running on the same home recorded are its own, and
//! are left alone.

/// What `/proc/PID/stat` says of a process.
pub(crate) struct ProcStat {
    pub state: char,
    pub ppid: libc::pid_t,
    pub pgrp: libc::pid_t,
    /// When it started, in clock ticks since boot: with the boot id, what tells a process
    /// from a later one given the same number.
    pub start_ticks: u64,
}

pub(crate) fn stat(pid: libc::pid_t) -> Option<ProcStat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (in parentheses) may hold spaces and parentheses: fields follow the last `)`.
    let fields: Vec<&str> = text.get(text.rfind(')')? + 2..)?.split(' ').collect();
    Some(ProcStat {
        state: fields.first()?.chars().next()?,
        ppid: fields.get(1)?.parse().ok()?,
        pgrp: fields.get(2)?.parse().ok()?,
        start_ticks: fields.get(19)?.parse().ok()?,
    })
}

/// This boot of the machine (a recorded group from another boot is long gone).
pub(crate) fn boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id").map(|s| s.trim().to_string()).unwrap_or_default()
}

/// A process (a group's leader, or a daemon) as recorded: enough to tell it from a later
/// process given the same number.
pub(crate) struct Recorded {
    pub pgid: libc::pid_t,
    pub start_ticks: u64,
    pub boot_id: String,
    /// The child's `KENNEL_PROCESS` value (empty for a daemon).
    pub marker: String,
}

/// This process, as a child's row records its daemon.
pub(crate) fn this_process() -> Recorded {
    let pid = std::process::id() as libc::pid_t;
    Recorded {
        pgid: pid,
        start_ticks: stat(pid).map_or(0, |s| s.start_ticks),
        boot_id: boot_id(),
        marker: String::new(),
    }
}

/// Whether the recorded process is still running (same boot, same pid, same start time).
pub(crate) fn is_alive(process: &Recorded) -> bool {
    process.boot_id == boot_id()
        && stat(process.pgid).is_some_and(|s| s.start_ticks == process.start_ticks && s.state != 'Z')
}

/// Kills `group` if it is still the recorded one; says whether it did.
pub(crate) fn reap(group: &Recorded) -> bool {
    if group.pgid <= 1 || group.boot_id != boot_id() {
        return false;
    }
    let ours = match stat(group.pgid) {
        Some(leader) => leader.start_ticks == group.start_ticks && leader.pgrp == group.pgid,
        None => members(group.pgid).into_iter().any(|pid| carries(pid, &group.marker)),
    };
    if ours {
        // SAFETY: a signal to a process group checked above to be the recorded one.
        unsafe {
            libc::kill(-group.pgid, libc::SIGKILL);
        }
    }
    ours
}

/// Whether any live process is in group `pgid`.
pub(crate) fn has_members(pgid: libc::pid_t) -> bool {
    !members(pgid).is_empty()
}

/// The live processes of group `pgid`.
pub(crate) fn members(pgid: libc::pid_t) -> Vec<libc::pid_t> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<libc::pid_t>().ok())
        .filter(|&pid| stat(pid).is_some_and(|s| s.pgrp == pgid && s.state != 'Z'))
        .collect()
}

/// Whether `pid`'s environment holds `KENNEL_PROCESS=marker`.
fn carries(pid: libc::pid_t, marker: &str) -> bool {
    let wanted = format!("{}={marker}", super::MARKER);
    !marker.is_empty()
        && std::fs::read(format!("/proc/{pid}/environ"))
            .is_ok_and(|env| env.split(|b| *b == 0).any(|var| var == wanted.as_bytes()))
}

/// The first child of `pid` (the supervisor's command), if the kernel lists it.
pub(crate) fn first_child(pid: libc::pid_t) -> Option<libc::pid_t> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).ok()?;
    text.split_whitespace().next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_reads_as_alive_in_its_own_group() {
        let me = std::process::id() as libc::pid_t;
        let s = stat(me).expect("own stat");
        // SAFETY: getpgrp has no preconditions.
        assert_eq!(s.pgrp, unsafe { libc::getpgrp() });
        assert!(s.start_ticks > 0 && s.state != 'Z');
        assert!(has_members(s.pgrp));
        assert!(!boot_id().is_empty());
    }

    #[test]
    fn a_group_recorded_with_another_start_time_is_left_alone() {
        let me = std::process::id() as libc::pid_t;
        let s = stat(me).unwrap();
        // This test process is not a group leader in general; a leader with a different start
        // time is someone else's group, and one from another boot is gone.
        let recorded = |start_ticks, boot_id| Recorded { pgid: me, start_ticks, boot_id, marker: "m".into() };
        assert!(!reap(&recorded(s.start_ticks + 1, boot_id())));
        assert!(!reap(&recorded(s.start_ticks, "another boot".into())));
        assert!(is_alive(&this_process()));
        assert!(!is_alive(&recorded(s.start_ticks + 1, boot_id())));
    }
}
