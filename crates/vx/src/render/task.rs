//! Frames and one-liners (UI-1, UI-2), and their GitHub Actions form (UI-9).

use vx_core::units::format_duration;

use super::style::Style;
use vx_engine::outcome::{Status, TaskReport};

/// `<glyph> <duration> <status>[ <cache>] <task id>[ @remote][ • blocked by <id>]`.
pub fn one_liner(style: &Style, report: &TaskReport) -> String {
    let status = report.status;
    let mut line = format!(
        "{} {} {}",
        paint_glyph(style, status, report.glyph()),
        format_duration(report.duration),
        status.word()
    );
    if matches!(status, Status::Success | Status::Failed) {
        if let Some(cache) = report.cache {
            line.push(' ');
            line.push_str(cache.word());
        }
    }
    line.push(' ');
    line.push_str(&style.id(&report.id));
    if report.remote {
        line.push_str(" @remote");
    }
    if let Some(cause) = &report.blocked_by {
        line.push_str(&format!(" • blocked by {}", style.id(cause)));
    }
    if report.kept {
        line.push(' ');
        line.push_str(&style.dim("(kept: nothing it depends on changed)"));
    }
    if let Some(note) = report.flaky() {
        line.push(' ');
        line.push_str(&style.dim(&note));
    }
    line.push('\n');
    line
}

fn paint_glyph(style: &Style, status: Status, glyph: &str) -> String {
    match status {
        Status::Success | Status::Running => style.green(glyph),
        Status::Failed | Status::Aborted => style.red(glyph),
        Status::Skipped | Status::NotRun => style.yellow(glyph),
    }
}

/// The opening of a frame: header and `$ command` line.
pub fn frame_head(style: &Style, report: &TaskReport, status: Option<&str>) -> String {
    let mut text = format!("┌─ {}", style.id(&report.id));
    if report.remote {
        text.push_str(" @remote");
    }
    if let Some(status) = status {
        let status = if report.status == Status::Failed {
            style.red(status)
        } else {
            status.to_string()
        };
        text.push_str(&format!("  {status}"));
    }
    text.push('\n');
    if report.executed {
        if let Some(command) = &report.command_line {
            // A multi-line command's last newline (TOML's `"""` block) is not a blank line.
            text.push_str(&style.dim(&format!("$ {}", command.trim_end())));
            text.push('\n');
        }
    }
    text
}

/// The closing line of a frame.
pub fn frame_tail(style: &Style, report: &TaskReport) -> String {
    let word = report.status.word();
    let word = match report.status {
        Status::Failed | Status::Aborted => style.red(word),
        _ => style.green(word),
    };
    let flaky = report
        .flaky()
        .map_or(String::new(), |note| format!("  {}", style.dim(&note)));
    format!(
        "└─ {}  ({})  {word}{flaky}\n",
        style.id(&report.id),
        format_duration(report.duration)
    )
}

/// A whole frame, output included; ends with a blank line separating it from the next.
pub fn frame(style: &Style, report: &TaskReport) -> Vec<u8> {
    let mut bytes = frame_head(style, report, Some(&report.header_status())).into_bytes();
    bytes.extend_from_slice(&report.log);
    if !report.log.is_empty() && !report.log.ends_with(b"\n") {
        bytes.push(b'\n');
    }
    bytes.extend_from_slice(frame_tail(style, report).as_bytes());
    bytes.push(b'\n');
    bytes
}

/// A value for a GitHub Actions workflow command: `%`, CR and LF always escaped, and `:` and
/// `,` too in a property (`title=`), where they would end it.
fn workflow_escape(text: &str, property: bool) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '%' => out.push_str("%25"),
            '\r' => out.push_str("%0D"),
            '\n' => out.push_str("%0A"),
            ':' if property => out.push_str("%3A"),
            ',' if property => out.push_str("%2C"),
            c => out.push(c),
        }
    }
    out
}

/// UI-9: a frame for a GitHub Actions log. A success is folded into a group titled with the
/// header status and duration; a failure stays outside any group and is followed by an
/// `::error` annotation. The task's output is fenced with `::stop-commands::<token>` so that
/// nothing it prints is taken as a workflow command; `token` is random per run.
pub fn github_frame(style: &Style, report: &TaskReport, token: &str) -> Vec<u8> {
    let status = report.header_status();
    let failed = report.status == Status::Failed;
    let mut bytes = Vec::new();
    if !failed {
        bytes.extend_from_slice(
            format!(
                "::group::{} ({status} {})\n",
                report.id,
                format_duration(report.duration)
            )
            .as_bytes(),
        );
    }
    bytes.extend_from_slice(frame_head(style, report, Some(&status)).as_bytes());
    if !report.log.is_empty() {
        bytes.extend_from_slice(format!("::stop-commands::{token}\n").as_bytes());
        bytes.extend_from_slice(&report.log);
        if !report.log.ends_with(b"\n") {
            bytes.push(b'\n');
        }
        bytes.extend_from_slice(format!("::{token}::\n").as_bytes());
    }
    bytes.extend_from_slice(frame_tail(style, report).as_bytes());
    if failed {
        let title = workflow_escape(&report.id.to_string(), true);
        let message = workflow_escape(&status, false);
        bytes.extend_from_slice(format!("::error title={title}::{message}\n").as_bytes());
    } else {
        bytes.extend_from_slice(b"::endgroup::\n");
    }
    bytes.push(b'\n');
    bytes
}

#[cfg(test)]
mod tests {
    use super::workflow_escape;

    #[test]
    fn workflow_command_values_are_escaped() {
        assert_eq!(workflow_escape("@a/b#build", true), "@a/b#build");
        assert_eq!(workflow_escape("x:y,z%", true), "x%3Ay%2Cz%25");
        assert_eq!(
            workflow_escape("failed (exit 1): a,b\n", false),
            "failed (exit 1): a,b%0A"
        );
    }
}
