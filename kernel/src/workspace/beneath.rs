//! Folder descriptors, and every file operation of a workspace done relative to one.
//!
//! A path argument is never handed to the kernel whole: it is walked one plain name at a
//! time from the workspace's own descriptor, each folder opened with
//! `O_DIRECTORY | O_NOFOLLOW` and held, and the last step (`openat`, `renameat`, `linkat`,
//! `unlinkat`, `mkdirat`, `fstatat` without following) acts on the folder that was opened.
//! A name is one path part (no `/`, never `.` or `..`, checked by `check_relative`), so no
//! step can climb out, and a symbolic link anywhere is refused rather than followed. Another
//! process swapping a folder for a link between two steps changes nothing: the descriptor
//! already held is the folder that was checked. This is what `openat2(RESOLVE_BENEATH |
//! RESOLVE_NO_SYMLINKS)` does in one call, done in steps so that missing folders can be made
//! on the way and each step's refusal named; it needs nothing newer than Linux 2.6.16.

use std::ffi::{CStr, CString};
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;

/// An open folder.
#[derive(Debug)]
pub(super) struct Dir(OwnedFd);

/// What is at a name in a folder, not following a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    File,
    Dir,
    Link,
    Other,
}

/// What `fstat` says of an entry, as the workspace uses it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Stat {
    pub kind: Kind,
    pub links: u64,
    pub bytes: u64,
    pub modified_secs: i64,
    /// Device and inode: what tells the file that was checked from one swapped in after.
    pub identity: (u64, u64),
}

impl Stat {
    // The fields' widths differ between architectures (`st_nlink` is 32 bits on some).
    #[allow(clippy::unnecessary_cast)]
    fn of(st: &libc::stat) -> Stat {
        let kind = match st.st_mode & libc::S_IFMT {
            libc::S_IFREG => Kind::File,
            libc::S_IFDIR => Kind::Dir,
            libc::S_IFLNK => Kind::Link,
            _ => Kind::Other,
        };
        Stat {
            kind,
            links: st.st_nlink as u64,
            bytes: st.st_size as u64,
            modified_secs: st.st_mtime as i64,
            identity: (st.st_dev as u64, st.st_ino as u64),
        }
    }
}

fn c_name(name: &str) -> io::Result<CString> {
    CString::new(name).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a name with a NUL byte"))
}

fn check(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 { Err(io::Error::last_os_error()) } else { Ok(ret) }
}

/// Flags every descriptor here is opened with.
const CLOEXEC_NOFOLLOW: libc::c_int = libc::O_CLOEXEC | libc::O_NOFOLLOW;

impl Dir {
    /// Opens a folder the daemon itself names (the workspaces' root), refusing a link as its
    /// last part.
    pub fn open_path(path: &Path) -> io::Result<Dir> {
        let path = CString::new(path.as_os_str().as_encoded_bytes())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a path with a NUL byte"))?;
        // SAFETY: open with a NUL-terminated path; the result is a new descriptor or -1.
        let fd = check(unsafe { libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY | CLOEXEC_NOFOLLOW) })?;
        // SAFETY: a descriptor just returned by open, owned by nothing else.
        Ok(Dir(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    /// Another descriptor of the same folder.
    pub fn try_clone(&self) -> io::Result<Dir> {
        Ok(Dir(self.0.try_clone()?))
    }

    /// The folder `name` in this one; a link there fails with `ELOOP` or `ENOTDIR`.
    pub fn open_dir(&self, name: &str) -> io::Result<Dir> {
        let fd = self.openat(name, libc::O_RDONLY | libc::O_DIRECTORY, 0)?;
        Ok(Dir(fd))
    }

    /// Makes the folder `name` (owner-only) if nothing is there.
    pub fn make_dir(&self, name: &str) -> io::Result<()> {
        let c = c_name(name)?;
        // SAFETY: mkdirat on a valid descriptor and a NUL-terminated name.
        match check(unsafe { libc::mkdirat(self.0.as_raw_fd(), c.as_ptr(), 0o700) }) {
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
            other => other.map(drop),
        }
    }

    /// Opens `name` for reading without following a link (and without blocking on a FIFO).
    pub fn open_read(&self, name: &str) -> io::Result<File> {
        Ok(File::from(self.openat(name, libc::O_RDONLY | libc::O_NONBLOCK, 0)?))
    }

    /// Makes a new file `name`, failing if anything (a link included) is there.
    pub fn create_new(&self, name: &str) -> io::Result<File> {
        Ok(File::from(self.openat(name, libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL, 0o666)?))
    }

    fn openat(&self, name: &str, flags: libc::c_int, mode: libc::c_uint) -> io::Result<OwnedFd> {
        let c = c_name(name)?;
        // SAFETY: openat on a valid descriptor and a NUL-terminated name.
        let fd = check(unsafe { libc::openat(self.0.as_raw_fd(), c.as_ptr(), flags | CLOEXEC_NOFOLLOW, mode) })?;
        // SAFETY: a descriptor just returned by openat, owned by nothing else.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }

    /// What is at `name`, the link itself if it is one; `None` if nothing is.
    pub fn stat(&self, name: &str) -> io::Result<Option<Stat>> {
        let c = c_name(name)?;
        let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
        // SAFETY: fstatat on a valid descriptor, a NUL-terminated name and room for the result.
        let ret = unsafe { libc::fstatat(self.0.as_raw_fd(), c.as_ptr(), st.as_mut_ptr(), libc::AT_SYMLINK_NOFOLLOW) };
        match check(ret) {
            // SAFETY: fstatat succeeded, so it filled `st`.
            Ok(_) => Ok(Some(Stat::of(&unsafe { st.assume_init() }))),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Renames `from` in this folder to `to` in `into`, replacing what is there.
    pub fn rename(&self, from: &str, into: &Dir, to: &str) -> io::Result<()> {
        let (from, to) = (c_name(from)?, c_name(to)?);
        // SAFETY: renameat on valid descriptors and NUL-terminated names.
        check(unsafe { libc::renameat(self.0.as_raw_fd(), from.as_ptr(), into.0.as_raw_fd(), to.as_ptr()) }).map(drop)
    }

    /// Links `from` in this folder as `to` in `into`, never replacing (`AlreadyExists`), never
    /// following a link at `from`.
    pub fn link(&self, from: &str, into: &Dir, to: &str) -> io::Result<()> {
        let (from, to) = (c_name(from)?, c_name(to)?);
        // SAFETY: linkat on valid descriptors and NUL-terminated names; flags 0 links a link itself.
        check(unsafe { libc::linkat(self.0.as_raw_fd(), from.as_ptr(), into.0.as_raw_fd(), to.as_ptr(), 0) }).map(drop)
    }

    /// Removes the entry `name` (not a folder).
    pub fn unlink(&self, name: &str) -> io::Result<()> {
        let c = c_name(name)?;
        // SAFETY: unlinkat on a valid descriptor and a NUL-terminated name.
        check(unsafe { libc::unlinkat(self.0.as_raw_fd(), c.as_ptr(), 0) }).map(drop)
    }

    /// The names in this folder with what each is (`.` and `..` left out; names that are not
    /// UTF-8 too, since no path argument can name them).
    pub fn entries(&self) -> io::Result<Vec<(String, Kind)>> {
        // SAFETY: dup of a valid descriptor; fdopendir takes the copy over (closedir closes it).
        let copy = check(unsafe { libc::fcntl(self.0.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 0) })?;
        // SAFETY: fdopendir on a descriptor this function owns.
        let stream = unsafe { libc::fdopendir(copy) };
        if stream.is_null() {
            let e = io::Error::last_os_error();
            // SAFETY: closing the copy fdopendir did not take.
            unsafe { libc::close(copy) };
            return Err(e);
        }
        let mut names = Vec::new();
        loop {
            // SAFETY: readdir on a stream this function opened; the entry is read before the
            // next call.
            let entry = unsafe { libc::readdir(stream) };
            if entry.is_null() {
                break;
            }
            // SAFETY: readdir returned a valid entry whose name is NUL-terminated.
            let (name, d_type) = unsafe { (CStr::from_ptr((*entry).d_name.as_ptr()), (*entry).d_type) };
            let Ok(name) = name.to_str() else { continue };
            if name == "." || name == ".." {
                continue;
            }
            let kind = match d_type {
                libc::DT_REG => Kind::File,
                libc::DT_DIR => Kind::Dir,
                libc::DT_LNK => Kind::Link,
                libc::DT_UNKNOWN => match self.stat(name) {
                    Ok(Some(stat)) => stat.kind,
                    _ => continue,
                },
                _ => Kind::Other,
            };
            names.push((name.to_string(), kind));
        }
        // SAFETY: closes the stream (and the copied descriptor) opened above.
        unsafe { libc::closedir(stream) };
        Ok(names)
    }
}

/// What `fstat` says of an open file.
pub(super) fn stat_of(file: &File) -> io::Result<Stat> {
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: fstat on a valid descriptor with room for the result.
    check(unsafe { libc::fstat(file.as_raw_fd(), st.as_mut_ptr()) })?;
    // SAFETY: fstat succeeded, so it filled `st`.
    Ok(Stat::of(&unsafe { st.assume_init() }))
}
