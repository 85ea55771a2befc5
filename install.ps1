# qmd-daemon setup for Claude Code and Codex (Windows). A thin wrapper over the one Python
# implementation, qmd_daemon/setup (also behind install.sh); see docs/install.md.
#
#   .\install.ps1                                  ask: Enable local QMD search models? [y/N/a]
#   .\install.ps1 -SemanticRetrieval yes|no|auto [-DryRun] [-Profile qwen3|small] [-PythonEnv DIR]
[CmdletBinding()]
param(
    [ValidateSet('yes', 'no', 'auto', 'y', 'n', 'a')][string]$SemanticRetrieval,
    [switch]$DryRun,
    [ValidateSet('qwen3', 'small')][string]$Profile,
    [string]$PythonEnv,
    [switch]$AutoRetrieve,
    [string[]]$GitHook,
    [Parameter(ValueFromRemainingArguments = $true)][string[]]$Rest
)
$ErrorActionPreference = 'Stop'
$here = Split-Path -Parent $MyInvocation.MyCommand.Path

# The first Python >= 3.11, as a command line: the program, then its leading arguments ('py -3').
function Find-Python {
    # Windows PowerShell 5.1 turns a native program's redirected stderr into an error record, and
    # under the script's 'Stop' that would end the search at the Store's python3 stub
    $ErrorActionPreference = 'Continue'
    $candidates = @()
    if ($env:QMD_PYTHON) { $candidates += , @($env:QMD_PYTHON) }
    $candidates += , @('py', '-3'); $candidates += , @('python3'); $candidates += , @('python')
    foreach ($c in $candidates) {
        $exe = $c[0]; $pre = @($c | Select-Object -Skip 1)
        if (-not (Get-Command $exe -ErrorAction SilentlyContinue)) { continue }
        & $exe @pre -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' 2>$null
        # the unary comma keeps the array whole on return (without it, PowerShell unrolls it)
        if ($LASTEXITCODE -eq 0) { return , $c }
    }
    return $null
}

$argsOut = @()
if ($SemanticRetrieval) { $argsOut += @('--semantic-retrieval', $SemanticRetrieval) }
if ($DryRun) { $argsOut += '--dry-run' }
if ($Profile) { $argsOut += @('--profile', $Profile) }
if ($PythonEnv) { $argsOut += @('--python-env', $PythonEnv) }
if ($AutoRetrieve) { $argsOut += '--auto-retrieve' }
foreach ($repo in $GitHook) { $argsOut += @('--git-hook', $repo) }
if ($Rest) { $argsOut += $Rest }

$python = Find-Python
if (-not $python) {
    switch -Regex ($SemanticRetrieval) {
        '^(y|yes)$' { Write-Error 'install: Python 3.11 or newer is required (set QMD_PYTHON); nothing was changed'; exit 2 }
        '^(a|auto)$' { Write-Output 'Auto: unsuitable: Python 3.11 or newer is required; continuing as No (nothing to install)'; exit 0 }
        default { Write-Output 'install: Python 3.11 or newer not found; nothing to do'; exit 0 }
    }
}
$env:PYTHONPATH = if ($env:PYTHONPATH) { "$here;$env:PYTHONPATH" } else { $here }
$exe = $python[0]; $pre = @($python | Select-Object -Skip 1)
& $exe @pre -m qmd_daemon.setup @argsOut
exit $LASTEXITCODE
