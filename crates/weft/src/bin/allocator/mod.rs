//! The global allocator of weft's binaries: jemalloc, as rustc uses. Scheduling allocates and
//! frees many small IR nodes and solver terms, and took about a third less time with it than
//! with glibc's allocator (`weft-sched-bench`). The libraries leave the choice to their users.

#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;
