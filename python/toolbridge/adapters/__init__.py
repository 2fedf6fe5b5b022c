"""Adapters on the toolbridge client for the frameworks that run evaluations and RL:

- ``toolbridge.adapters.openai``: OpenAI function calling (``OpenAITools``, ``AsyncOpenAITools``)
- ``toolbridge.adapters.miroflow``: a MiroFlow/MiroThinker ToolManager (``ToolbridgeToolManager``)
- ``toolbridge.adapters.verl``: a verl ``BaseTool`` (``ToolbridgeTool``; needs verl installed)

Each is imported on its own, so one framework's absence does not affect the others."""
