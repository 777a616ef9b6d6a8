"""Compiles tests/native/check_abi.c: the static assertions of tflite/abi.h (the TFLite C ABI
as flexdelegate declares it) hold, and its declarations are usable from strict C11 without
warnings."""
import pytest

import cbuild


def test_abi_header_compiles_cleanly_as_c11(tmp_path):
    if cbuild.host_cc() is None:
        pytest.skip("no C compiler found")
    cbuild.build([cbuild.HERE / "check_abi.c"], tmp_path / "check_abi.o", compile_only=True,
                 extra=["-std=c11", "-Wextra", "-Wpedantic"])
