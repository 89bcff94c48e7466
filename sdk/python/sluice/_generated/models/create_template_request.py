from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="CreateTemplateRequest")



@_attrs_define
class CreateTemplateRequest:
    """ A template build asked for.

        Attributes:
            dockerfile (str): The Dockerfile, as text.
            name (str): The template's name: its image is `templates/NAME`.
            context (None | str | Unset): The build's context: a tar archive, base64.
            ready_command (None | str | Unset): A line of shell that exits 0 once a workspace of this template is ready.
            start_command (None | str | Unset): A line of shell a workspace of this template runs as its managed process.
     """

    dockerfile: str
    name: str
    context: None | str | Unset = UNSET
    ready_command: None | str | Unset = UNSET
    start_command: None | str | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        dockerfile = self.dockerfile

        name = self.name

        context: None | str | Unset
        if isinstance(self.context, Unset):
            context = UNSET
        else:
            context = self.context

        ready_command: None | str | Unset
        if isinstance(self.ready_command, Unset):
            ready_command = UNSET
        else:
            ready_command = self.ready_command

        start_command: None | str | Unset
        if isinstance(self.start_command, Unset):
            start_command = UNSET
        else:
            start_command = self.start_command


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "dockerfile": dockerfile,
            "name": name,
        })
        if context is not UNSET:
            field_dict["context"] = context
        if ready_command is not UNSET:
            field_dict["readyCommand"] = ready_command
        if start_command is not UNSET:
            field_dict["startCommand"] = start_command

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        dockerfile = d.pop("dockerfile")

        name = d.pop("name")

        def _parse_context(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        context = _parse_context(d.pop("context", UNSET))


        def _parse_ready_command(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        ready_command = _parse_ready_command(d.pop("readyCommand", UNSET))


        def _parse_start_command(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        start_command = _parse_start_command(d.pop("startCommand", UNSET))


        create_template_request = cls(
            dockerfile=dockerfile,
            name=name,
            context=context,
            ready_command=ready_command,
            start_command=start_command,
        )

        return create_template_request

