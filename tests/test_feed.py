"""_feed.Feed: a code-mode program's stdin, a pipe fed from the caller's descriptor."""

from __future__ import annotations

import os
import tempfile
import unittest

from mcp_client.codemode._feed import Feed


def read_all(fd: int) -> bytes:
    data = b""
    while True:
        chunk = os.read(fd, 65536)
        if not chunk:
            return data
        data += chunk


class Feeding(unittest.TestCase):
    def test_a_file_arrives_whole_then_eof_and_the_file_is_never_handed_on(self) -> None:
        with tempfile.TemporaryFile() as source:
            source.write(b"x" * 300_000)  # more than a pipe holds: the copy waits for reads
            source.seek(0)
            feed = Feed(source.fileno())
            feed.start()
            try:
                self.assertEqual(read_all(feed.program_end), b"x" * 300_000)
            finally:
                os.close(feed.program_end)
                feed.stop()

    def test_no_source_is_eof_at_once(self) -> None:
        feed = Feed(None)
        feed.start()
        try:
            self.assertEqual(os.read(feed.program_end, 10), b"")
        finally:
            os.close(feed.program_end)
            feed.stop()

    def test_stop_ends_a_source_that_never_ends_and_a_reader_that_never_reads(self) -> None:
        for filled in (0, 65536, 60000):  # idle; the program's pipe full; past it, waiting
            quiet_read, quiet_write = os.pipe()  # a terminal nobody types into any more
            try:
                feed = Feed(quiet_read)
                feed.start()
                os.write(quiet_write, b"y" * filled)
                if filled == 60000:
                    os.write(quiet_write, b"y" * 60000)  # the copy now waits to write
                feed.stop()  # returns: neither the source nor the program can hold it
                os.close(feed.program_end)
            finally:
                os.close(quiet_read)
                os.close(quiet_write)

    def test_a_program_that_closes_its_stdin_ends_the_copy(self) -> None:
        with tempfile.TemporaryFile() as source:
            source.write(b"x" * 1_000_000)
            source.seek(0)
            feed = Feed(source.fileno())
            os.close(feed.program_end)  # EPIPE on the first write
            feed.start()
            feed.stop()
