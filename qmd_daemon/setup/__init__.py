"""Install, uninstall and the Auto benchmark: the one implementation behind install.sh/install.ps1.

The orchestrator (`installer`, `journal`, `integrations`, `paths`, `state`, `envs`, `llama_wheel`,
`progress`) uses the standard library only, so `install.sh` can run it with a bare `python3`
before any dependency exists.
The steps that need the package (`tasks`: models block, pull, device; `bench`) run inside the
target environment as subprocesses.
"""
