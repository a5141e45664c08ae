"""The write side's decisions, one module per kind of entity: a fold of its stream into a small state
value, and pure `decide_*` functions that take the state and a command's input and return what to
append (`Pending`, at the versions that follow the state's) or raise a `commands.errors` refusal.

No I/O happens here: the commands load streams, pass the clock and new ids in, and append what was
decided (through `commands.streams.execute`); the unit tests fold events by hand and call the deciders."""
