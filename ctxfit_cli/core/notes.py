"""The constant texts ctxfit puts into requests.

They never contain counts, times or ids: a note that changed from one request to the next would
change the request's prefix and break the provider's prompt cache.
"""

#: Replaces the content of a cleared tool result (DESIGN §4, stage 1).
CLEARED_RESULT = (
    "[This tool result was cleared to keep the conversation within the model's context. "
    "Run the tool again if you need its output.]"
)

#: Added to the first message when older turns or rounds are left out (stages 2 and 3). True
#: of every trimmed request: the newest part kept may hold steps, or the newest prompt alone.
TRIMMED_HISTORY = (
    "[Earlier conversation was trimmed to keep it within the model's context. "
    "The first message and the most recent part of the conversation follow.]"
)

#: What the agent must know about its safety net (DESIGN §5).
AGENT_NOTE = (
    "Context management: when this conversation grows beyond what the model can take at once, "
    "the oldest tool results are cleared automatically and the newest stay whole. Do not stop a "
    "long task early to save space: carry on with the work, and if you need the content of a "
    "result that was cleared, run the tool again (for example, read the file again)."
)

#: What the person sees when even the smallest request is larger than the model's window.
#: It asks for a user action; it is not an outage, and retrying cannot help.
TOO_LONG = (
    "This conversation is too long for the model to process at once. Start a new chat for the "
    "next step — everything you have made so far stays."
)

#: The result given to a tool call that the log never answered (a live log whose tool was still
#: running, an interrupted call): the API refuses a call without a result. Codex CLI answers a
#: missing output the same way ("aborted").
ABORTED_CALL = "aborted: this tool call has no recorded result (it was interrupted or had not finished)."

#: Opens an Anthropic conversation that the log starts with an assistant message: the API
#: requires the first message to be from the user.
OPENING_USER = "[The recorded conversation starts with the assistant's message that follows.]"
