//! vx's Zed extension: starts `vx lsp`, the language server built into vx, for the TOML and
//! JSON files of a worktree (the server answers for `vx.toml` and `package.json` only). The
//! `vx` it starts is the one on the worktree's `PATH`.

use zed_extension_api as zed;

struct Vx;

impl zed::Extension for Vx {
    fn new() -> Self {
        Vx
    }

    fn language_server_command(
        &mut self,
        _id: &zed::LanguageServerId,
        worktree: &zed::Worktree,
    ) -> zed::Result<zed::Command> {
        let vx = worktree
            .which("vx")
            .ok_or_else(|| "vx is not on the PATH of this worktree: install it (docs/install.md)".to_string())?;
        Ok(zed::Command {
            command: vx,
            args: vec!["lsp".to_string()],
            env: Vec::new(),
        })
    }
}

zed::register_extension!(Vx);
