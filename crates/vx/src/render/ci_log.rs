//! UI-16: the log sections and error annotations of the CI a run is in, for GitLab CI, Azure
//! Pipelines, Buildkite and TeamCity (GitHub Actions' are `task::github_frame`, UI-9). A task
//! that succeeded is folded into a section titled with its id, status and duration; a failed one
//! stays open (Buildkite: an expanded section) and is followed by the CI's error annotation
//! where it has one. Those CIs have no way to stop reading commands (GitHub's
//! `::stop-commands::`), so in a task's output (and its `$` command line) the markers they act
//! on are broken with a zero width space (U+200B), which shows nothing: a task cannot close
//! vx's section or forge one.
//!
//! | CI (detected by) | section | failure |
//! |---|---|---|
//! | GitLab CI (`GITLAB_CI`) | `section_start:<time>:<name>[collapsed=true]` … `section_end:<time>:<name>` | no section, no annotation (GitLab has none in logs) |
//! | Azure Pipelines (`TF_BUILD`) | `##[group]` … `##[endgroup]` | `##vso[task.logissue type=error]` |
//! | Buildkite (`BUILDKITE`) | `--- ` (collapsed) | `+++ ` (expanded) |
//! | TeamCity (`TEAMCITY_VERSION`) | `##teamcity[blockOpened …]` … `blockClosed` | `##teamcity[buildProblem …]` |

use std::collections::BTreeMap;

use vx_core::units::format_duration;
use vx_engine::outcome::{Status, TaskReport};

use super::style::Style;
use super::task::{frame_head, frame_tail};

/// The zero width space that breaks a marker in a task's output.
const BREAK: &str = "\u{200b}";

/// A CI whose log folds into sections (other than GitHub Actions).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CiLog {
    GitLab,
    Azure,
    Buildkite,
    TeamCity,
}

impl CiLog {
    /// The CI `env` says the run is in, if it is one of these.
    pub fn detect(env: &BTreeMap<String, String>) -> Option<CiLog> {
        let set = |name: &str| env.get(name).is_some_and(|v| !v.trim().is_empty());
        let is_true = |name: &str| {
            env.get(name)
                .is_some_and(|v| v.eq_ignore_ascii_case("true"))
        };
        if is_true("GITLAB_CI") {
            Some(CiLog::GitLab)
        } else if is_true("TF_BUILD") {
            Some(CiLog::Azure)
        } else if is_true("BUILDKITE") {
            Some(CiLog::Buildkite)
        } else if set("TEAMCITY_VERSION") {
            Some(CiLog::TeamCity)
        } else {
            None
        }
    }

    /// A task's frame in this CI's sections.
    pub fn frame(self, style: &Style, report: &TaskReport) -> Vec<u8> {
        let status = report.header_status();
        let failed = report.status == Status::Failed;
        let title = format!(
            "{} ({status} {})",
            report.id,
            format_duration(report.duration)
        );
        let mut out = String::new();
        match (self, failed) {
            // GitLab times a section by its two stamps: it started when the task did.
            (CiLog::GitLab, false) => out.push_str(&format!(
                "\x1b[0Ksection_start:{}:{}[collapsed=true]\r\x1b[0K{title}\n",
                now().saturating_sub(report.duration.as_secs()),
                section_name(&report.id.to_string())
            )),
            (CiLog::Azure, false) => out.push_str(&format!("##[group]{title}\n")),
            (CiLog::Buildkite, false) => out.push_str(&format!("--- {title}\n")),
            (CiLog::Buildkite, true) => out.push_str(&format!("+++ {title}\n")),
            (CiLog::TeamCity, false) => out.push_str(&format!(
                "##teamcity[blockOpened name='{}' description='{}']\n",
                teamcity_escape(&report.id.to_string()),
                teamcity_escape(&status)
            )),
            _ => {}
        }
        // The head shows the command, which may hold a marker too.
        let head = frame_head(style, report, Some(&status));
        out.push_str(&String::from_utf8_lossy(&self.fence(head.as_bytes())));
        let mut bytes = out.into_bytes();
        if !report.log.is_empty() {
            bytes.extend_from_slice(&self.fence(&report.log));
            if !report.log.ends_with(b"\n") {
                bytes.push(b'\n');
            }
        }
        let mut out = frame_tail(style, report);
        let message = format!("{}: {status}", report.id);
        match (self, failed) {
            (CiLog::GitLab, false) => out.push_str(&format!(
                "\x1b[0Ksection_end:{}:{}\r\x1b[0K\n",
                now(),
                section_name(&report.id.to_string())
            )),
            (CiLog::Azure, false) => out.push_str("##[endgroup]\n"),
            (CiLog::Azure, true) => out.push_str(&format!(
                "##vso[task.logissue type=error]{}\n",
                message.replace(['\r', '\n'], " ")
            )),
            (CiLog::TeamCity, false) => out.push_str(&format!(
                "##teamcity[blockClosed name='{}']\n",
                teamcity_escape(&report.id.to_string())
            )),
            (CiLog::TeamCity, true) => out.push_str(&format!(
                "##teamcity[buildProblem description='{}']\n",
                teamcity_escape(&message)
            )),
            _ => {}
        }
        out.push('\n');
        bytes.extend_from_slice(out.as_bytes());
        bytes
    }

    /// A task's output with this CI's markers broken, line by line.
    pub fn fence(self, log: &[u8]) -> Vec<u8> {
        let text = String::from_utf8_lossy(log);
        let mut out = String::with_capacity(text.len());
        for line in text.split_inclusive('\n') {
            out.push_str(&self.defang(line));
        }
        out.into_bytes()
    }

    fn defang(self, line: &str) -> String {
        match self {
            CiLog::GitLab => line
                .replace("section_start:", &format!("section_{BREAK}start:"))
                .replace("section_end:", &format!("section_{BREAK}end:")),
            CiLog::Azure => line
                .replace("##vso[", &format!("#{BREAK}#vso["))
                .replace("##[", &format!("#{BREAK}#[")),
            CiLog::TeamCity => line.replace("##teamcity[", &format!("#{BREAK}#teamcity[")),
            CiLog::Buildkite => {
                let marker = ["---", "+++", "~~~", "^^^"]
                    .iter()
                    .any(|m| line.trim_start().starts_with(m));
                if marker {
                    format!("{BREAK}{line}")
                } else {
                    line.to_string()
                }
            }
        }
    }
}

/// Seconds since the epoch, for GitLab's section markers.
fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// A GitLab section name: `[A-Za-z0-9_.-]` only.
fn section_name(id: &str) -> String {
    id.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// A TeamCity service message value: `|`, `'`, `[`, `]`, CR and LF escaped with `|`.
fn teamcity_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '|' => out.push_str("||"),
            '\'' => out.push_str("|'"),
            '[' => out.push_str("|["),
            ']' => out.push_str("|]"),
            '\n' => out.push_str("|n"),
            '\r' => out.push_str("|r"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_ci_is_found_by_its_variable() {
        let env = |k: &str, v: &str| BTreeMap::from([(k.to_string(), v.to_string())]);
        assert_eq!(
            CiLog::detect(&env("GITLAB_CI", "true")),
            Some(CiLog::GitLab)
        );
        assert_eq!(CiLog::detect(&env("TF_BUILD", "True")), Some(CiLog::Azure));
        assert_eq!(
            CiLog::detect(&env("BUILDKITE", "true")),
            Some(CiLog::Buildkite)
        );
        assert_eq!(
            CiLog::detect(&env("TEAMCITY_VERSION", "2024.12")),
            Some(CiLog::TeamCity)
        );
        assert_eq!(CiLog::detect(&env("CI", "true")), None);
    }

    #[test]
    fn a_tasks_output_cannot_open_or_close_a_section() {
        let forged = b"ok\n\x1b[0Ksection_end:1:x\r\x1b[0K\n##[endgroup]\n##vso[task.complete result=Succeeded]\n--- :rocket: fake\n##teamcity[blockClosed name='x']\n";
        for ci in [
            CiLog::GitLab,
            CiLog::Azure,
            CiLog::Buildkite,
            CiLog::TeamCity,
        ] {
            let fenced = String::from_utf8(ci.fence(forged)).unwrap();
            let markers: &[&str] = match ci {
                CiLog::GitLab => &["section_end:"],
                CiLog::Azure => &["##[endgroup]", "##vso["],
                CiLog::Buildkite => &["\n--- "],
                CiLog::TeamCity => &["##teamcity["],
            };
            for marker in markers {
                assert!(!fenced.contains(marker), "{ci:?}: {marker} in {fenced:?}");
            }
            // Nothing else changes: without the breaks it is the output as printed.
            assert_eq!(fenced.replace(BREAK, ""), String::from_utf8_lossy(forged));
        }
    }

    #[test]
    fn a_gitlab_section_starts_when_its_task_started() {
        use vx_core::TaskId;
        use vx_engine::outcome::Status;
        let mut report =
            TaskReport::not_started(TaskId::new("web", "build"), Status::Success, None);
        report.duration = std::time::Duration::from_secs(100);
        let text =
            String::from_utf8(CiLog::GitLab.frame(&Style { colour: false }, &report)).unwrap();
        let stamp = |marker: &str| -> u64 {
            let at = text.find(marker).unwrap() + marker.len();
            text[at..].split(':').next().unwrap().parse().unwrap()
        };
        let (start, end) = (stamp("section_start:"), stamp("section_end:"));
        assert!(
            (100..=101).contains(&(end - start)),
            "{start} {end}: {text:?}"
        );
    }

    #[test]
    fn teamcity_values_and_gitlab_names_are_escaped() {
        assert_eq!(teamcity_escape("a|b'c[d]\n"), "a||b|'c|[d|]|n");
        assert_eq!(section_name("@scope/web#build"), "_scope_web_build");
    }
}
