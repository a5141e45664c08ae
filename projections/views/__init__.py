"""The read side's views: the only code that queries the read-model tables (`rm_*`); one module per read
model, called by readapi, mcp_server and delivery alike."""
