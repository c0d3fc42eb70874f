"""spica.core.stops.stop_signals: Ctrl-C stops the command once, never inside an import, and is not
lost where Python drops it (a garbage collector's callback). Real signals, this process."""

from __future__ import annotations

import _thread
import gc
import importlib
import signal
import sys
import time

import pytest

from spica.core.stops import stop_signals as _stop_signals


@pytest.fixture(autouse=True)
def _ctrl_c_as_from_a_terminal():
    """A suite started in the background of a script (`cmd &`) inherits an ignored SIGINT, which
    _stop_signals rightly leaves ignored: these tests run as from a terminal, where Ctrl-C counts."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def _idle(seconds: float) -> None:
    """Python code running (where a pending signal's handler runs) for `seconds`."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


def test_ctrl_c_during_an_import_is_raised_once_the_import_is_done(tmp_path, monkeypatch):
    """Raised into a native module's initialisation it could abort the process (jaxlib's did)."""
    (tmp_path / "slow_to_import.py").write_text(
        "import _thread, time\n"
        "_thread.interrupt_main()  # Ctrl-C while this module imports\n"
        "end = time.monotonic() + 0.3\n"
        "while time.monotonic() < end:\n"
        "    pass\n"
        "IMPORTED = True\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(KeyboardInterrupt), _stop_signals():
        importlib.import_module("slow_to_import")
        _idle(2.0)
    assert sys.modules["slow_to_import"].IMPORTED
    sys.modules.pop("slow_to_import")


def test_a_second_ctrl_c_while_stopping_does_nothing():
    """Raised into the shutdown, it would cut it short (the pool's replays, the journal)."""
    with _stop_signals():
        with pytest.raises(KeyboardInterrupt):
            _thread.interrupt_main()
            _idle(2.0)
        _thread.interrupt_main()  # pressed again while the first one stops the command
        _idle(0.5)


def test_ctrl_c_dropped_in_a_garbage_collectors_callback_is_raised_again():
    """Python prints an exception raised in a gc callback and drops it: the search went on."""
    calls = []

    def callback(phase: str, info: dict) -> None:
        if not calls:
            calls.append(phase)
            _thread.interrupt_main()
            _idle(0.05)  # the handler runs here, inside the callback

    gc.callbacks.append(callback)
    try:
        with pytest.raises(KeyboardInterrupt), _stop_signals():
            gc.collect()
            _idle(2.0)
    finally:
        gc.callbacks.remove(callback)
    assert calls


def test_a_signal_the_command_was_started_ignoring_stays_ignored():
    """A script's background job (`cmd &`) ignores Ctrl-C, and so does the search it runs."""
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with _stop_signals():
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
            assert signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL
    finally:
        signal.signal(signal.SIGINT, previous)
