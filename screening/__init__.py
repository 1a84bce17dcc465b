"""The input screen: reads every user message before anything else, alone and with the messages
before it (`crisis.assess`, `context_model`): a crisis, small talk, a request about the writer's own
case and its kind, the language it is written in.

Text readings at the bottom (crisis_text, crisis_languages: patterns and word lists, as data),
the learned models above them (screen_model, request_kind, context_model: shipped artefacts in the
repository's artefacts/ folder, fitted by `cafbot judges train`), `crisis` on top. Every model is
given what it needs of the embedder (`app.core.learning.encoder.Encoder`) or of the screen
(`crisis.Screens`), never the object that builds them (`judges.local.resources.Resources`).
"""
