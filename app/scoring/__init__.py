"""Compliance scoring: items from drift runs or saved chats, raters assigned blind, scores in the
store and in spreadsheets, the agreement statistics, the report and the AI pre-rating.

It sits above `app.drift` (it scores drift runs) and keeps its statistics (`analysis`) free of the
store, so `cafbot score analyse` works on any sheet."""
