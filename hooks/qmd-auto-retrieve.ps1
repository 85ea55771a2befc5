# qmd-daemon UserPromptSubmit hook (opt-in) for Windows: see qmd-auto-retrieve.py. Never fails a prompt.
$QMD_PYTHON_DEFAULT = ""  # filled in by the installer
$ErrorActionPreference = 'SilentlyContinue'
try {
    $py = if ($QMD_PYTHON_DEFAULT -and (Test-Path $QMD_PYTHON_DEFAULT)) { $QMD_PYTHON_DEFAULT } else { 'python' }
    $input | & $py (Join-Path $PSScriptRoot 'qmd-auto-retrieve.py')
} catch { }
exit 0
