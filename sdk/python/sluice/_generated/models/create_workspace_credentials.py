from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="CreateWorkspaceCredentials")



@_attrs_define
class CreateWorkspaceCredentials:
    """ Connected-account selection. Accepted by the schema; this install refuses it (422).

        Attributes:
            claude (None | str | Unset):
            codex (None | str | Unset):
            github (None | str | Unset):
            profile_id (None | str | Unset):
     """

    claude: None | str | Unset = UNSET
    codex: None | str | Unset = UNSET
    github: None | str | Unset = UNSET
    profile_id: None | str | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        claude: None | str | Unset
        if isinstance(self.claude, Unset):
            claude = UNSET
        else:
            claude = self.claude

        codex: None | str | Unset
        if isinstance(self.codex, Unset):
            codex = UNSET
        else:
            codex = self.codex

        github: None | str | Unset
        if isinstance(self.github, Unset):
            github = UNSET
        else:
            github = self.github

        profile_id: None | str | Unset
        if isinstance(self.profile_id, Unset):
            profile_id = UNSET
        else:
            profile_id = self.profile_id


        field_dict: dict[str, Any] = {}

        field_dict.update({
        })
        if claude is not UNSET:
            field_dict["claude"] = claude
        if codex is not UNSET:
            field_dict["codex"] = codex
        if github is not UNSET:
            field_dict["github"] = github
        if profile_id is not UNSET:
            field_dict["profileId"] = profile_id

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        def _parse_claude(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        claude = _parse_claude(d.pop("claude", UNSET))


        def _parse_codex(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        codex = _parse_codex(d.pop("codex", UNSET))


        def _parse_github(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        github = _parse_github(d.pop("github", UNSET))


        def _parse_profile_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        profile_id = _parse_profile_id(d.pop("profileId", UNSET))


        create_workspace_credentials = cls(
            claude=claude,
            codex=codex,
            github=github,
            profile_id=profile_id,
        )

        return create_workspace_credentials

