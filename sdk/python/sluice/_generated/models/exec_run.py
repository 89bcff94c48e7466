from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.run_status import RunStatus
from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.run_command_result import RunCommandResult
  from ..models.workspace_error import WorkspaceError





T = TypeVar("T", bound="ExecRun")



@_attrs_define
class ExecRun:
    """ A deterministic-exec run.

        Attributes:
            commands (list[RunCommandResult]):
            created_at (str):
            exit_code (int | None):
            harness_id (str):
            run_id (str):
            status (RunStatus): `queued | running | completed | failed`.
            workspace_id (str):
            error (None | Unset | WorkspaceError):
            finished_at (None | str | Unset):
            started_at (None | str | Unset):
     """

    commands: list[RunCommandResult]
    created_at: str
    exit_code: int | None
    harness_id: str
    run_id: str
    status: RunStatus
    workspace_id: str
    error: None | Unset | WorkspaceError = UNSET
    finished_at: None | str | Unset = UNSET
    started_at: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.run_command_result import RunCommandResult # noqa: PLC0415
        from ..models.workspace_error import WorkspaceError # noqa: PLC0415
        commands = []
        for commands_item_data in self.commands:
            commands_item = commands_item_data.to_dict()
            commands.append(commands_item)



        created_at = self.created_at

        exit_code: int | None
        exit_code = self.exit_code

        harness_id = self.harness_id

        run_id = self.run_id

        status = self.status.value

        workspace_id = self.workspace_id

        error: dict[str, Any] | None | Unset
        if isinstance(self.error, Unset):
            error = UNSET
        elif isinstance(self.error, WorkspaceError):
            error = self.error.to_dict()
        else:
            error = self.error

        finished_at: None | str | Unset
        if isinstance(self.finished_at, Unset):
            finished_at = UNSET
        else:
            finished_at = self.finished_at

        started_at: None | str | Unset
        if isinstance(self.started_at, Unset):
            started_at = UNSET
        else:
            started_at = self.started_at


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "commands": commands,
            "createdAt": created_at,
            "exitCode": exit_code,
            "harnessId": harness_id,
            "runId": run_id,
            "status": status,
            "workspaceId": workspace_id,
        })
        if error is not UNSET:
            field_dict["error"] = error
        if finished_at is not UNSET:
            field_dict["finishedAt"] = finished_at
        if started_at is not UNSET:
            field_dict["startedAt"] = started_at

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.run_command_result import RunCommandResult # noqa: PLC0415
        from ..models.workspace_error import WorkspaceError # noqa: PLC0415
        d = dict(src_dict)
        commands = []
        _commands = d.pop("commands")
        for commands_item_data in (_commands):
            commands_item = RunCommandResult.from_dict(commands_item_data)



            commands.append(commands_item)


        created_at = d.pop("createdAt")

        def _parse_exit_code(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        exit_code = _parse_exit_code(d.pop("exitCode"))


        harness_id = d.pop("harnessId")

        run_id = d.pop("runId")

        status = RunStatus(d.pop("status"))




        workspace_id = d.pop("workspaceId")

        def _parse_error(data: object) -> None | Unset | WorkspaceError:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                error_type_1 = WorkspaceError.from_dict(data)



                return error_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Unset | WorkspaceError, data)

        error = _parse_error(d.pop("error", UNSET))


        def _parse_finished_at(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        finished_at = _parse_finished_at(d.pop("finishedAt", UNSET))


        def _parse_started_at(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        started_at = _parse_started_at(d.pop("startedAt", UNSET))


        exec_run = cls(
            commands=commands,
            created_at=created_at,
            exit_code=exit_code,
            harness_id=harness_id,
            run_id=run_id,
            status=status,
            workspace_id=workspace_id,
            error=error,
            finished_at=finished_at,
            started_at=started_at,
        )


        exec_run.additional_properties = d
        return exec_run

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
