from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast

if TYPE_CHECKING:
  from ..models.run_command import RunCommand





T = TypeVar("T", bound="ExecWorkspaceRequest")



@_attrs_define
class ExecWorkspaceRequest:
    """ 
        Attributes:
            commands (list[RunCommand]): 1 to 32 commands, run in order whatever their exit codes.
            owner_user_id (str): The user the workspace belongs to.
     """

    commands: list[RunCommand]
    owner_user_id: str





    def to_dict(self) -> dict[str, Any]:
        from ..models.run_command import RunCommand # noqa: PLC0415
        commands = []
        for commands_item_data in self.commands:
            commands_item = commands_item_data.to_dict()
            commands.append(commands_item)



        owner_user_id = self.owner_user_id


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "commands": commands,
            "ownerUserId": owner_user_id,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.run_command import RunCommand # noqa: PLC0415
        d = dict(src_dict)
        commands = []
        _commands = d.pop("commands")
        for commands_item_data in (_commands):
            commands_item = RunCommand.from_dict(commands_item_data)



            commands.append(commands_item)


        owner_user_id = d.pop("ownerUserId")

        exec_workspace_request = cls(
            commands=commands,
            owner_user_id=owner_user_id,
        )

        return exec_workspace_request

