from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast






T = TypeVar("T", bound="RunCommandResult")



@_attrs_define
class RunCommandResult:
    """ 
        Attributes:
            argv (list[str]):
            exit_code (int | None): `null` until the command has run; a signal `n` reads `128 + n`.
            stderr (str):
            stderr_truncated (bool):
            stdout (str):
            stdout_truncated (bool):
            timed_out (bool): The command ran past its `timeoutMs` and was killed.
     """

    argv: list[str]
    exit_code: int | None
    stderr: str
    stderr_truncated: bool
    stdout: str
    stdout_truncated: bool
    timed_out: bool
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        argv = self.argv



        exit_code: int | None
        exit_code = self.exit_code

        stderr = self.stderr

        stderr_truncated = self.stderr_truncated

        stdout = self.stdout

        stdout_truncated = self.stdout_truncated

        timed_out = self.timed_out


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "argv": argv,
            "exitCode": exit_code,
            "stderr": stderr,
            "stderrTruncated": stderr_truncated,
            "stdout": stdout,
            "stdoutTruncated": stdout_truncated,
            "timedOut": timed_out,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        argv = cast(list[str], d.pop("argv"))


        def _parse_exit_code(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        exit_code = _parse_exit_code(d.pop("exitCode"))


        stderr = d.pop("stderr")

        stderr_truncated = d.pop("stderrTruncated")

        stdout = d.pop("stdout")

        stdout_truncated = d.pop("stdoutTruncated")

        timed_out = d.pop("timedOut")

        run_command_result = cls(
            argv=argv,
            exit_code=exit_code,
            stderr=stderr,
            stderr_truncated=stderr_truncated,
            stdout=stdout,
            stdout_truncated=stdout_truncated,
            timed_out=timed_out,
        )


        run_command_result.additional_properties = d
        return run_command_result

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
