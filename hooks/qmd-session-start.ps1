# qmd-daemon SessionStart hook (Claude Code and Codex) for Windows PowerShell / pwsh.
# Inside a git repository, start `qmd-warm` detached and exit 0 at once; outside one, do nothing.
# Errors go to the hook log; a hook never blocks or fails a session.
$QMD_WARM_DEFAULT = ""  # filled in by the installer with its qmd-warm wrapper
$ErrorActionPreference = 'SilentlyContinue'
$logDir = if ($env:QMD_DAEMON_HOME) { Join-Path $env:QMD_DAEMON_HOME 'state\logs' }
          elseif ($env:XDG_STATE_HOME) { Join-Path $env:XDG_STATE_HOME 'qmd-daemon\logs' }
          else { Join-Path $HOME '.local\state\qmd-daemon\logs' }
try {
    $dir = if ($env:CLAUDE_PROJECT_DIR) { $env:CLAUDE_PROJECT_DIR } else { (Get-Location).Path }
    $root = & git -C $dir rev-parse --show-toplevel 2>$null
    if ($LASTEXITCODE -ne 0 -or -not $root) { exit 0 }
    $warm = if ($env:QMD_WARM) { $env:QMD_WARM } else { $QMD_WARM_DEFAULT }
    if (-not $warm -or -not (Test-Path -LiteralPath $warm)) {
        $cmd = Get-Command qmd-warm -ErrorAction SilentlyContinue
        $warm = if ($cmd) { $cmd.Source } else { $null }
    }
    New-Item -ItemType Directory -Force -Path $logDir | Out-Null
    if (-not $warm) {
        Add-Content -Path (Join-Path $logDir 'hooks.log') -Value "$(Get-Date -Format s) session-start: qmd-warm not found (run install.ps1)"
        exit 0
    }
    Start-Process -FilePath $warm -ArgumentList @('--repo', "`"$root`"") -WindowStyle Hidden | Out-Null
} catch {
    try { Add-Content -Path (Join-Path $logDir 'hooks.log') -Value "$(Get-Date -Format s) session-start: $_" } catch { }
}
exit 0
