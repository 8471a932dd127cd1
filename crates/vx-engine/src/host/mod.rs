//! What vx asks of the machine, apart from the pipeline: its environment (`env`), the memory
//! budget it admits tasks by (`memory`; the CPUs, the memory and the cgroup limits themselves are
//! probed by `vx_exec::host`), the signals it takes over (`signals`), and the sandbox
//! (`sandbox`: the host probe and each task's view; `proxy`: its filtering network proxy). Its
//! own short commands (git, runtime probes) go through `vx_exec::subprocess`.

pub mod env;
pub mod memory;
pub mod proxy;
pub mod sandbox;
pub mod signals;
