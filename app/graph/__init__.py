"""The answer graph (LangGraph): state, nodes, wiring, the services it uses and its checkpointer."""
