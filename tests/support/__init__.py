"""What tests share besides fixtures: clients, assertions, media samples, real
processes and small disks. Imported as ``tests.support.<module>``."""
