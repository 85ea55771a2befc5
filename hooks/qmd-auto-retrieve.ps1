# qmd-daemon UserPromptSubmit hook (opt-in) for Windows: see qmd-auto-retrieve.py. Never fails a prompt.
$QMD_PYTHON_DEFAULT = ""  # filled in by the installer
$ErrorActionPreference = 'SilentlyContinue'
try {
    # The agent sends UTF-8 JSON: read the bytes as UTF-8 and pipe them on as UTF-8 (by default
    # Windows PowerShell decodes and re-encodes with code pages that lose non-ASCII prompts).
    # The Python part prints ASCII-only JSON, so its output needs no such care.
    $utf8 = New-Object System.Text.UTF8Encoding $false
    $OutputEncoding = $utf8
    $reader = New-Object System.IO.StreamReader -ArgumentList ([Console]::OpenStandardInput()), $utf8
    $payload = $reader.ReadToEnd()
    $py = if ($QMD_PYTHON_DEFAULT -and (Test-Path -LiteralPath $QMD_PYTHON_DEFAULT)) { $QMD_PYTHON_DEFAULT } else { 'python' }
    $payload | & $py (Join-Path $PSScriptRoot 'qmd-auto-retrieve.py')
} catch { }
exit 0
