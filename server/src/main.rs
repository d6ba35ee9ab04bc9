//! `kennel`: the daemon and its command line.

mod actions;
mod app;
mod cli;
mod dashboard;
mod edge;
mod http;
mod live;
mod routes;
mod status;

use std::process::ExitCode;

use clap::Parser;

/// When `main` began, for the start-up line's first phase (`kennel start`).
static STARTED: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();

fn main() -> ExitCode {
    STARTED.get_or_init(std::time::Instant::now);
    // An agent's child process runs under `kennel __supervise` (kernel/src/process/supervisor.rs):
    // no runtime, no command line parsing, nothing of the daemon.
    if std::env::args_os().nth(1).is_some_and(|a| a == kennel_kernel::process::supervisor::ARG) {
        // Its arguments are the daemon's pid and `/bin/sh -c LINE`, where LINE passed the
        // tool's schema as a JSON string, so it is UTF-8.
        let args: Vec<String> = std::env::args_os().skip(2).map(|a| a.to_string_lossy().into_owned()).collect();
        return kennel_kernel::process::supervisor::main(&args);
    }
    // A child's sandbox waits for its command as `kennel __exec FD` (kernel/src/process/exec.rs).
    if std::env::args_os().nth(1).is_some_and(|a| a == kennel_kernel::process::exec::ARG) {
        let args: Vec<String> = std::env::args_os().skip(2).map(|a| a.to_string_lossy().into_owned()).collect();
        return kennel_kernel::process::exec::main(&args);
    }
    // Inside a sandbox with a network, `kennel __relay` (kernel/src/process/relay.rs) is the
    // command's way to the daemon's proxy: no runtime either.
    if std::env::args_os().nth(1).is_some_and(|a| a == kennel_kernel::process::relay::ARG) {
        let args: Vec<String> = std::env::args_os().skip(2).map(|a| a.to_string_lossy().into_owned()).collect();
        return kennel_kernel::process::relay::main(&args);
    }
    tune_malloc();
    let args = cli::Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(cli::run(args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", cli::terminal_safe(&format!("{e:#}")));
            if e.is::<cli::daemon::NoDaemon>() { ExitCode::from(3) } else { ExitCode::FAILURE }
        }
    }
}

/// Start-up derives the API's OpenAPI schemas (every handler brings its own copies), the tool
/// registry and the router: many short-lived allocations whose freed memory glibc keeps in its
/// heaps. Once the router stands, hand that back, so idle memory is what the daemon holds, not
/// what starting it took (measured: docs/BENCHMARKS.md, daemon).
///
/// The same goes for the code only starting runs (the migrations, the schema and router
/// builders, the command line): of an idle daemon's 24 MiB, 14 MiB were pages of the binary's
/// code, most of them touched once. They are clean pages of the file, which the kernel drops
/// under memory pressure anyway; unmapping them here keeps the pages in the page cache, and
/// the code that runs again is mapped back from there on its first use (a minor fault).
pub fn release_startup_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free heap pages to the system; it is thread-safe.
    unsafe {
        libc::malloc_trim(0);
    }
    #[cfg(target_os = "linux")]
    unmap_own_code_pages();
}

/// `MADV_DONTNEED` on the binary's executable mappings (`r-xp`, never written: nothing in them
/// differs from the file, so nothing is lost). A binary deleted or replaced since it started
/// (its path then ends in ` (deleted)`) is left alone.
#[cfg(target_os = "linux")]
fn unmap_own_code_pages() {
    let (Ok(maps), Ok(exe)) = (std::fs::read_to_string("/proc/self/maps"), std::fs::read_link("/proc/self/exe")) else {
        return;
    };
    let Some(exe) = exe.to_str() else { return };
    for line in maps.lines() {
        // `start-end perms offset dev inode path`
        let fields: Vec<&str> = line.split_whitespace().collect();
        let [range, "r-xp", _, _, _, path] = fields[..] else { continue };
        if path != exe {
            continue;
        }
        let Some((start, end)) = range.split_once('-') else { continue };
        let (Ok(start), Ok(end)) = (usize::from_str_radix(start, 16), usize::from_str_radix(end, 16)) else {
            continue;
        };
        // SAFETY: the range is a whole mapping of this process, read and executed only; the
        // kernel maps each page back from the file when it is next run.
        unsafe {
            libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_DONTNEED);
        }
    }
}

/// glibc gives each thread that allocates its own heap ("arena") and rarely hands freed memory
/// back, so a burst of work spread over the runtime's workers and SQLite's connection threads
/// leaves the daemon holding several heaps' worth of freed memory. With two arenas, a burst of
/// 10,000 scheduled turns read back as 10 MB responses left 111 MiB resident instead of
/// 178 MiB (docs/BENCHMARKS.md, schedules).
/// An operator's own `MALLOC_ARENA_MAX` wins.
///
/// Blocks of 1 MiB and more are mapped for each use and unmapped when freed. glibc starts out
/// that way but, once such a block is freed, raises its threshold to that size and keeps later
/// ones in its heaps, where smaller allocations pin them: 70 sign-ins in a row (argon2 takes
/// 19 MiB each, at most two at once) left the daemon holding 550 MiB instead of 41 MiB. An
/// operator's own `MALLOC_MMAP_THRESHOLD_` wins.
fn tune_malloc() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if std::env::var_os("MALLOC_ARENA_MAX").is_none() {
        // SAFETY: mallopt only sets an allocator tunable; it runs before any other thread exists.
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, 2);
        }
    }
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if std::env::var_os("MALLOC_MMAP_THRESHOLD_").is_none() {
        // SAFETY: as above.
        unsafe {
            libc::mallopt(libc::M_MMAP_THRESHOLD, 1024 * 1024);
        }
    }
}
