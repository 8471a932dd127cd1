//! What vx asks of the machine, apart from the pipeline: its environment (`env`), the CPUs and
//! memory it may use (`cpus`, `memory`), the signals it takes over (`signals`), its own short commands through
//! the supervisor (`subprocess`: git, runtime probes), and the sandbox (`sandbox`: the host
//! probe and each task's view; `proxy`: its filtering network proxy).

pub mod cpus;
pub mod env;
pub mod memory;
pub mod proxy;
pub mod sandbox;
pub mod signals;
pub mod subprocess;
