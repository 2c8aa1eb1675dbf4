"""What a server offers, sans-IO: tools, resources, prompts, completion, tasks and `Context`.

From a Python function to a registered primitive (its signature read, its schemas compiled, its
registry), and what a running function may ask of its request; running it is the runtime's job.
"""
