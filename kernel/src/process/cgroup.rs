//! A control group per child, where the daemon may make one: `pids.max` bounds how many
//! processes (and threads) the child's whole tree may have, the memory limit how much memory
//! it may use. Both the unified hierarchy (cgroup v2: `pids.max`, `memory.max`) and the
//! controllers' own hierarchies of a hybrid system (cgroup v1: `pids.max`,
//! `memory.limit_in_bytes`) are used, whichever holds the controller for this daemon's cgroup
//! and lets it make a sub-group there (root, or a delegated cgroup such as systemd's
//! `Delegate=yes`). The supervisor joins the groups before it starts the command, so nothing
//! the command starts is outside them.
//!
//! Ending the tree is not the cgroup's job: the sandbox's PID namespace does that (its first
//! process gone, the kernel kills the rest, however deep).

use std::path::{Path, PathBuf};

/// Where this daemon makes its children's groups, found once.
#[derive(Debug, Default)]
pub(crate) struct Place {
    pids: Option<Hierarchy>,
    memory: Option<Hierarchy>,
}

#[derive(Debug, Clone)]
struct Hierarchy {
    /// This daemon's own cgroup folder in it.
    dir: PathBuf,
    /// The unified hierarchy (`memory.max`) rather than a controller's own (`memory.limit_in_bytes`).
    v2: bool,
}

/// One child's groups, removed (once empty) when it is dropped.
#[derive(Debug)]
pub(crate) struct Groups {
    dirs: Vec<PathBuf>,
}

impl Place {
    /// Reads `/proc/self/cgroup` and `/proc/self/mountinfo`; a controller is used only where
    /// a test group could be made and removed again.
    pub fn find() -> Place {
        let (Ok(own), Ok(mounts)) =
            (std::fs::read_to_string("/proc/self/cgroup"), std::fs::read_to_string("/proc/self/mountinfo"))
        else {
            return Place::default();
        };
        let mut place = Place::default();
        for line in own.lines() {
            let mut fields = line.splitn(3, ':');
            let (Some(_), Some(controllers), Some(path)) = (fields.next(), fields.next(), fields.next()) else {
                continue;
            };
            if controllers.is_empty() {
                // The unified hierarchy: a sub-group gets the controllers this group hands
                // down (its `cgroup.subtree_control`, set by whoever delegated it).
                let Some(dir) = mount_of(&mounts, None, path) else { continue };
                let offered = std::fs::read_to_string(dir.join("cgroup.subtree_control")).unwrap_or_default();
                for name in offered.split_whitespace() {
                    let slot = match name {
                        "pids" => &mut place.pids,
                        "memory" => &mut place.memory,
                        _ => continue,
                    };
                    slot.get_or_insert(Hierarchy { dir: dir.clone(), v2: true });
                }
            } else {
                for name in controllers.split(',') {
                    let slot = match name {
                        "pids" => &mut place.pids,
                        "memory" => &mut place.memory,
                        _ => continue,
                    };
                    if let Some(dir) = mount_of(&mounts, Some(name), path) {
                        *slot = Some(Hierarchy { dir, v2: false });
                    }
                }
            }
        }
        place.pids = place.pids.filter(can_make_groups);
        place.memory = place.memory.filter(can_make_groups);
        place
    }

    /// What applies here, for the daemon's log and the README's promise.
    pub fn describe(&self) -> String {
        let name = |h: &Option<Hierarchy>, what: &str| match h {
            Some(h) => format!("{what} by cgroup {} ({})", if h.v2 { "v2" } else { "v1" }, h.dir.display()),
            None => format!("{what} not by a cgroup (none can be made here)"),
        };
        format!("{}; {}", name(&self.pids, "process count"), name(&self.memory, "memory"))
    }

    pub fn limits_memory(&self) -> bool {
        self.memory.is_some()
    }

    /// Makes the groups of one child, named `name`, with its limits. `None` where no
    /// controller can be used.
    pub fn make(&self, name: &str, max_processes: u64, max_memory_bytes: u64) -> std::io::Result<Option<Groups>> {
        let mut groups = Groups { dirs: Vec::new() };
        let memory_file =
            if self.memory.as_ref().is_some_and(|h| h.v2) { "memory.max" } else { "memory.limit_in_bytes" };
        for (hierarchy, file, value) in
            [(&self.pids, "pids.max", max_processes), (&self.memory, memory_file, max_memory_bytes)]
        {
            let Some(hierarchy) = hierarchy else { continue };
            let dir = hierarchy.dir.join(name);
            if !groups.dirs.contains(&dir) {
                std::fs::create_dir(&dir)?;
                groups.dirs.push(dir.clone());
            }
            std::fs::write(dir.join(file), value.to_string())?;
        }
        Ok((!groups.dirs.is_empty()).then_some(groups))
    }
}

impl Groups {
    /// The `cgroup.procs` files the supervisor writes its pid to.
    pub fn procs_files(&self) -> Vec<PathBuf> {
        self.dirs.iter().map(|d| d.join("cgroup.procs")).collect()
    }
}

impl Drop for Groups {
    fn drop(&mut self) {
        for dir in &self.dirs {
            // Fails while a process is still in it; the next start's sweep takes it then.
            let _ = std::fs::remove_dir(dir);
        }
    }
}

/// The folder of cgroup `path` in the hierarchy of `controller` (`None`: the unified one).
fn mount_of(mountinfo: &str, controller: Option<&str>, path: &str) -> Option<PathBuf> {
    mountinfo.lines().find_map(|line| {
        let (left, right) = line.split_once(" - ")?;
        let left: Vec<&str> = left.split(' ').collect();
        let right: Vec<&str> = right.split(' ').collect();
        let (root, point, fstype, options) = (left.get(3)?, left.get(4)?, right.first()?, right.get(2)?);
        let matches = match controller {
            None => *fstype == "cgroup2",
            Some(name) => *fstype == "cgroup" && options.split(',').any(|o| o == name),
        };
        if !matches {
            return None;
        }
        let inner = path.strip_prefix(root.trim_end_matches('/')).unwrap_or(path);
        Some(Path::new(point).join(inner.trim_start_matches('/')))
    })
}

/// Whether a sub-group can be made (and removed) in `h`'s folder.
fn can_make_groups(h: &Hierarchy) -> bool {
    let probe = h.dir.join(format!("kennel-probe-{}", std::process::id()));
    let made = std::fs::create_dir(&probe).is_ok();
    made && std::fs::remove_dir(&probe).is_ok()
}

/// The start of the names of the groups made for the daemon of `home`: daemons of other homes
/// share the folder (tests run dozens at once, a cluster may run two nodes on one machine), and
/// each must sweep only its own, never a group another has just made and not yet joined.
pub(crate) fn prefix_for(home: &Path) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(home.as_os_str().as_encoded_bytes());
    format!("kennel-proc-{}-", hex::encode(&digest[..6]))
}

/// Removes the empty groups an earlier run of this home's daemon left (named `prefix…`).
pub(crate) fn sweep(place: &Place, prefix: &str) {
    for hierarchy in [&place.pids, &place.memory].into_iter().flatten() {
        let Ok(items) = std::fs::read_dir(&hierarchy.dir) else { continue };
        for item in items.flatten() {
            if item.file_name().to_str().is_some_and(|n| n.starts_with(prefix)) {
                let _ = std::fs::remove_dir(item.path());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_daemons_sweep_leaves_the_groups_of_another_homes_daemon_alone() {
        let place = Place::find();
        if place.pids.is_none() && place.memory.is_none() {
            // Unprivileged without a delegated cgroup no group can be made (README, Processes);
            // the test run's CI is root, where one can.
            // SAFETY: geteuid has no preconditions.
            assert_ne!(unsafe { libc::geteuid() }, 0, "root finds a place for control groups");
            eprintln!("skipped: no control group can be made here");
            return;
        }
        let (mine, theirs) = (prefix_for(Path::new("/srv/kennel-a")), prefix_for(Path::new("/srv/kennel-b")));
        assert_ne!(mine, theirs);
        assert_eq!(mine, prefix_for(Path::new("/srv/kennel-a")), "the same home, the same names at every run");
        // Made by the other daemon, not yet joined by its supervisor: empty, as a stale one is.
        let name = format!("{theirs}{}", uuid::Uuid::now_v7());
        let groups = place.make(&name, 16, 64 << 20).unwrap().expect("a place makes groups");
        sweep(&place, &mine);
        assert!(groups.dirs.iter().all(|d| d.is_dir()), "another home's fresh group survives a sweep");
        sweep(&place, &theirs);
        assert!(groups.dirs.iter().all(|d| !d.exists()), "its own daemon's sweep takes it");
    }
}
