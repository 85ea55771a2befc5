# qmd-daemon setup for Claude Code and Codex (Windows). A thin wrapper over the one Python
# implementation, qmd_daemon/setup (also behind install.sh); see docs/install.md.
#
#   .\install.ps1                                  ask: Enable local QMD search models? [y/N/a]
#   .\install.ps1 -SemanticRetrieval yes|no|auto [-DryRun] [-Profile qwen3|small] [-PythonEnv DIR]
#   'y' | .\install.ps1                            piped answers work (also echo y | pwsh -File install.ps1)
[CmdletBinding()]
param(
    [ValidateSet('yes', 'no', 'auto', 'y', 'n', 'a')][string]$SemanticRetrieval,
    [switch]$DryRun,
    [ValidateSet('qwen3', 'small')][string]$Profile,
    [string]$PythonEnv,
    [switch]$AutoRetrieve,
    [string[]]$GitHook,
    # a line piped into the script ('y' | .\install.ps1); all of them are read from $input below
    [Parameter(ValueFromPipeline = $true)][string]$Answer,
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

# The setup asks its question on its own standard input, but PowerShell hands neither a pipe into
# this script ('y' | .\install.ps1: $input) nor its own redirected input (echo y | pwsh -File
# install.ps1: [Console]::In) to the programs it starts. So the answers are read here and piped on:
# the setup re-asks after an invalid one and refuses at the end of the input with the hint, as it
# does behind install.sh. Redirected input with nothing in it is refused here the same way.
$answers = @($input)
$redirected = [Console]::IsInputRedirected
if (-not $SemanticRetrieval -and $answers.Count -eq 0 -and $redirected) {
    for ($line = [Console]::In.ReadLine(); $null -ne $line; $line = [Console]::In.ReadLine()) { $answers += $line }
}

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
if ($SemanticRetrieval -or -not ($answers.Count -or $redirected)) {
    & $exe @pre -m qmd_daemon.setup @argsOut  # told, or a console the setup asks on
} elseif ($answers.Count) {
    $answers | & $exe @pre -m qmd_daemon.setup @argsOut
} else {
    [Console]::Error.WriteLine('install: error: no answer on standard input; nothing was changed (pass -SemanticRetrieval yes|no|auto)')
    exit 2
}
exit $LASTEXITCODE
