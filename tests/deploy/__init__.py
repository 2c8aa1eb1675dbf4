"""Scale-out: worker processes (`trio-mcp run --workers`) and the load balancers of deploy/."""
