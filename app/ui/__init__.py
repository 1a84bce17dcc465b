"""The Streamlit app: the patient chat (the main job) and the staff pages. Pages are thin over the
same `Chatbot` the CLI uses; `cafbot ui` starts it."""
