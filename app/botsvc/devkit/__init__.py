"""What the tests and the scripts both run: a real server with the suite's
defaults, nginx in front of it, webhook receivers, slow clients, process
readings, the fuzzer. It imports botsvc, never tests or scripts, so neither
tree reaches into the other (docs/DEVELOPING.md, "scripts/, tests/ and
devkit/"). Not installed with the package."""
