from app.core.config_sections import InputLimits
from app.input import clean_message

LIMITS = InputLimits(max_chars=200)


def test_empty_and_whitespace_are_empty():
    for text in ("", "   ", "\n\t \u200b", "\x00\x07"):
        assert clean_message(text, LIMITS).empty


def test_control_and_invisible_characters_are_removed_but_words_kept():
    cleaned = clean_message("what is\x00 clo\u200bzapine?\x1b[31m", LIMITS)
    assert cleaned.text == "what is clozapine?[31m"


def test_look_alike_unicode_is_normalised():
    assert clean_message("ｗｈａｔ is ＣＢＴ？", LIMITS).text == "what is CBT?"


def test_long_message_is_trimmed_with_a_notice_at_a_word_boundary():
    cleaned = clean_message("word " * 100, LIMITS)
    assert len(cleaned.text) <= 200 and cleaned.text.endswith("word")
    assert cleaned.notices and "first" in cleaned.notices[0]


def test_long_message_can_be_refused_instead():
    cleaned = clean_message("x" * 500, InputLimits(max_chars=200, on_too_long="refuse"))
    assert cleaned.refused and "500" in cleaned.notices[0]
