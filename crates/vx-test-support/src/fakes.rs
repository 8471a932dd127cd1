//! Fake implementations of vx's seams (ARCH-2), so the run loop and the scheduler can be
//! tested without processes: a scripted [`Executor`] and a fixed [`SchedulerPolicy`].

use std::sync::{Arc, Mutex};
use std::time::Duration;

use vx_core::graph::TaskGraph;
use vx_core::schedule::{Admission, SchedulerPolicy};
use vx_exec::{Completion, ExecEvent, Executor, ExitReason, RunningTask, SpawnSpec, Stream};

/// What a scripted attempt prints and how it ends.
#[derive(Debug, Clone, Default)]
pub struct Script {
    pub output: Vec<(Stream, Vec<u8>)>,
    pub exit_code: i32,
}

/// An executor that runs nothing: the attempt whose `sh -c` script contains a key plays that
/// key's [`Script`] (the first matching key wins; no match prints nothing and exits 0). Every
/// spawned script is recorded, in spawn order.
#[derive(Clone, Default)]
pub struct ScriptedExecutor {
    scripts: Vec<(String, Script)>,
    spawned: Arc<Mutex<Vec<String>>>,
}

impl ScriptedExecutor {
    pub fn new() -> ScriptedExecutor {
        ScriptedExecutor::default()
    }

    /// Attempts whose script contains `needle` print `stdout` and exit with `exit_code`.
    pub fn on(mut self, needle: &str, stdout: &str, exit_code: i32) -> ScriptedExecutor {
        let script = Script {
            output: vec![(Stream::Stdout, stdout.as_bytes().to_vec())],
            exit_code,
        };
        self.scripts.push((needle.to_string(), script));
        self
    }

    /// The scripts spawned so far, in order.
    pub fn spawned(&self) -> Vec<String> {
        self.spawned.lock().expect("not poisoned").clone()
    }
}

impl Executor for ScriptedExecutor {
    fn spawn(
        &self,
        spec: SpawnSpec,
        mut sink: Box<dyn FnMut(ExecEvent) + Send>,
    ) -> Box<dyn RunningTask> {
        let script_text = spec
            .args
            .last()
            .map(|a| a.to_string_lossy().into_owned())
            .unwrap_or_default();
        self.spawned
            .lock()
            .expect("not poisoned")
            .push(script_text.clone());
        let script = self
            .scripts
            .iter()
            .find(|(needle, _)| script_text.contains(needle.as_str()))
            .map(|(_, s)| s.clone())
            .unwrap_or_default();
        std::thread::spawn(move || {
            for (stream, bytes) in script.output {
                sink(ExecEvent::Output { stream, bytes });
            }
            sink(ExecEvent::Completed(Completion {
                exit: ExitReason::Code(script.exit_code),
                exit_code: script.exit_code,
                timed_out: false,
                stopped: false,
                killed: false,
                duration: Duration::from_millis(1),
                usage: None,
                sandbox: None,
            }));
        });
        Box::new(FakeTask)
    }
}

/// A scripted attempt: there is no process to signal.
#[derive(Clone, Copy)]
pub struct FakeTask;

impl RunningTask for FakeTask {
    fn pid(&self) -> Option<i32> {
        Some(i32::MAX)
    }
    fn stop(&self, _signal: i32) {}
    fn kill(&self) {}
    fn wait_stopped(&self) {}
    fn clone_box(&self) -> Box<dyn RunningTask> {
        Box::new(*self)
    }
}

/// A policy with given priorities (by node index) that admits at most `limit` running nodes.
pub struct FixedPolicy {
    pub priorities: Vec<u64>,
    pub limit: usize,
}

impl SchedulerPolicy for FixedPolicy {
    fn priorities(&self, graph: &TaskGraph) -> Vec<u64> {
        let mut p = self.priorities.clone();
        p.resize(graph.nodes.len(), 0);
        p
    }

    fn admits(&self, _node: usize, running: &[usize]) -> Admission {
        if running.len() < self.limit {
            Admission::Start
        } else {
            Admission::Wait
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use vx_core::graph::Node;
    use vx_core::schedule::{ContinueMode, Finish, Scheduler};
    use vx_core::TaskId;

    #[test]
    fn fixed_policy_orders_and_admits() {
        let nodes: Vec<Node> = ["a", "b", "c"]
            .iter()
            .map(|t| Node {
                id: TaskId::new("p", *t),
                project: 0,
                requested: true,
                deps: vec![],
                dependants: vec![],
                folds_dropped: false,
            })
            .collect();
        let index = nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.id.clone(), i))
            .collect();
        let graph = TaskGraph { nodes, index };
        let policy = FixedPolicy {
            priorities: vec![1, 5, 3],
            limit: 1,
        };
        let mut s = Scheduler::new(&graph, ContinueMode::DepsOk, Box::new(policy));
        assert_eq!(s.next_ready(), Some(1));
        assert_eq!(s.next_ready(), None);
        s.finish(1, Finish::Success);
        assert_eq!(s.next_ready(), Some(2));
    }
}
