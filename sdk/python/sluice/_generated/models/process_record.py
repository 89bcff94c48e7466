from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.process_state import ProcessState
from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="ProcessRecord")



@_attrs_define
class ProcessRecord:
    """ A process the executor keeps running.

        Attributes:
            argv (list[str]):
            process_id (str):
            started_at (str):
            state (ProcessState): Where a process is.
            cwd (None | str | Unset):
            ended_at (None | str | Unset):
            exit_code (int | None | Unset):
            name (None | str | Unset):
            signal (None | str | Unset): The signal that ended it (without `SIG`).
     """

    argv: list[str]
    process_id: str
    started_at: str
    state: ProcessState
    cwd: None | str | Unset = UNSET
    ended_at: None | str | Unset = UNSET
    exit_code: int | None | Unset = UNSET
    name: None | str | Unset = UNSET
    signal: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        argv = self.argv



        process_id = self.process_id

        started_at = self.started_at

        state = self.state.value

        cwd: None | str | Unset
        if isinstance(self.cwd, Unset):
            cwd = UNSET
        else:
            cwd = self.cwd

        ended_at: None | str | Unset
        if isinstance(self.ended_at, Unset):
            ended_at = UNSET
        else:
            ended_at = self.ended_at

        exit_code: int | None | Unset
        if isinstance(self.exit_code, Unset):
            exit_code = UNSET
        else:
            exit_code = self.exit_code

        name: None | str | Unset
        if isinstance(self.name, Unset):
            name = UNSET
        else:
            name = self.name

        signal: None | str | Unset
        if isinstance(self.signal, Unset):
            signal = UNSET
        else:
            signal = self.signal


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "argv": argv,
            "processId": process_id,
            "startedAt": started_at,
            "state": state,
        })
        if cwd is not UNSET:
            field_dict["cwd"] = cwd
        if ended_at is not UNSET:
            field_dict["endedAt"] = ended_at
        if exit_code is not UNSET:
            field_dict["exitCode"] = exit_code
        if name is not UNSET:
            field_dict["name"] = name
        if signal is not UNSET:
            field_dict["signal"] = signal

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        argv = cast(list[str], d.pop("argv"))


        process_id = d.pop("processId")

        started_at = d.pop("startedAt")

        state = ProcessState(d.pop("state"))




        def _parse_cwd(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        cwd = _parse_cwd(d.pop("cwd", UNSET))


        def _parse_ended_at(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        ended_at = _parse_ended_at(d.pop("endedAt", UNSET))


        def _parse_exit_code(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        exit_code = _parse_exit_code(d.pop("exitCode", UNSET))


        def _parse_name(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        name = _parse_name(d.pop("name", UNSET))


        def _parse_signal(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        signal = _parse_signal(d.pop("signal", UNSET))


        process_record = cls(
            argv=argv,
            process_id=process_id,
            started_at=started_at,
            state=state,
            cwd=cwd,
            ended_at=ended_at,
            exit_code=exit_code,
            name=name,
            signal=signal,
        )


        process_record.additional_properties = d
        return process_record

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
