

def test_a_reply_that_grows_after_a_fit_is_read_again_as_one_message():
    items = codex_loop(12)
    answer = {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Done."}]}
    more = {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Also this."}]}
    session = Session(budget=3_000, system=INSTRUCTIONS)
    session.fit(items + [answer])
    grown = items + [answer, more]  # the same reply, one more item: the walk starts over
    assert session.fit(grown) == fit(grown, budget=3_000, system=INSTRUCTIONS)
    assert session._starts[-1] == len(items)  # one message for both items
