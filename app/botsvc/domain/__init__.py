"""Domain functions: plain values in, plain values out, a connection passed
in. Flask handlers, the operator API, the CLI and the worker all call these."""
