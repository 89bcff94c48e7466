from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.run_command_env_type_0 import RunCommandEnvType0





T = TypeVar("T", bound="RunCommand")



@_attrs_define
class RunCommand:
    """ One command of a deterministic exec: argv run without a shell.

        Attributes:
            argv (list[str]): The program and its arguments, run without a shell.
            cwd (None | str | Unset):
            env (None | RunCommandEnvType0 | Unset):
            stdin (None | str | Unset):
            timeout_ms (int | None | Unset):
     """

    argv: list[str]
    cwd: None | str | Unset = UNSET
    env: None | RunCommandEnvType0 | Unset = UNSET
    stdin: None | str | Unset = UNSET
    timeout_ms: int | None | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        from ..models.run_command_env_type_0 import RunCommandEnvType0 # noqa: PLC0415
        argv = self.argv



        cwd: None | str | Unset
        if isinstance(self.cwd, Unset):
            cwd = UNSET
        else:
            cwd = self.cwd

        env: dict[str, Any] | None | Unset
        if isinstance(self.env, Unset):
            env = UNSET
        elif isinstance(self.env, RunCommandEnvType0):
            env = self.env.to_dict()
        else:
            env = self.env

        stdin: None | str | Unset
        if isinstance(self.stdin, Unset):
            stdin = UNSET
        else:
            stdin = self.stdin

        timeout_ms: int | None | Unset
        if isinstance(self.timeout_ms, Unset):
            timeout_ms = UNSET
        else:
            timeout_ms = self.timeout_ms


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "argv": argv,
        })
        if cwd is not UNSET:
            field_dict["cwd"] = cwd
        if env is not UNSET:
            field_dict["env"] = env
        if stdin is not UNSET:
            field_dict["stdin"] = stdin
        if timeout_ms is not UNSET:
            field_dict["timeoutMs"] = timeout_ms

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.run_command_env_type_0 import RunCommandEnvType0 # noqa: PLC0415
        d = dict(src_dict)
        argv = cast(list[str], d.pop("argv"))


        def _parse_cwd(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        cwd = _parse_cwd(d.pop("cwd", UNSET))


        def _parse_env(data: object) -> None | RunCommandEnvType0 | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                env_type_0 = RunCommandEnvType0.from_dict(data)



                return env_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | RunCommandEnvType0 | Unset, data)

        env = _parse_env(d.pop("env", UNSET))


        def _parse_stdin(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        stdin = _parse_stdin(d.pop("stdin", UNSET))


        def _parse_timeout_ms(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        timeout_ms = _parse_timeout_ms(d.pop("timeoutMs", UNSET))


        run_command = cls(
            argv=argv,
            cwd=cwd,
            env=env,
            stdin=stdin,
            timeout_ms=timeout_ms,
        )

        return run_command

