from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset







T = TypeVar("T", bound="RunCommandExit")



@_attrs_define
class RunCommandExit:
    """ A command's end in a run's stream (`event: exit`); a stream cut at its
    bound says so here.

        Attributes:
            command (int):
            exit_code (int):
            stderr_truncated (bool):
            stdout_truncated (bool):
            timed_out (bool):
     """

    command: int
    exit_code: int
    stderr_truncated: bool
    stdout_truncated: bool
    timed_out: bool
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        command = self.command

        exit_code = self.exit_code

        stderr_truncated = self.stderr_truncated

        stdout_truncated = self.stdout_truncated

        timed_out = self.timed_out


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "command": command,
            "exitCode": exit_code,
            "stderrTruncated": stderr_truncated,
            "stdoutTruncated": stdout_truncated,
            "timedOut": timed_out,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        command = d.pop("command")

        exit_code = d.pop("exitCode")

        stderr_truncated = d.pop("stderrTruncated")

        stdout_truncated = d.pop("stdoutTruncated")

        timed_out = d.pop("timedOut")

        run_command_exit = cls(
            command=command,
            exit_code=exit_code,
            stderr_truncated=stderr_truncated,
            stdout_truncated=stdout_truncated,
            timed_out=timed_out,
        )


        run_command_exit.additional_properties = d
        return run_command_exit

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> Any:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
