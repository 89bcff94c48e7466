from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.workspace_status import WorkspaceStatus
from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.workspace_error import WorkspaceError
  from ..models.workspace_published_image import WorkspacePublishedImage
  from ..models.workspace_runtime import WorkspaceRuntime
  from ..models.workspace_sleeping import WorkspaceSleeping





T = TypeVar("T", bound="WorkspaceSummary")



@_attrs_define
class WorkspaceSummary:
    """ 
        Attributes:
            created_at (str):
            name (str):
            owner_user_id (str):
            registry_id (str):
            repository (str):
            status (WorkspaceStatus):
            tag (str):
            updated_at (str):
            workspace_id (str):
            error (None | Unset | WorkspaceError):
            expires_at (None | str | Unset):
            finished_at (None | str | Unset):
            published_image (None | Unset | WorkspacePublishedImage):
            runtime (None | Unset | WorkspaceRuntime):
            sleeping (None | Unset | WorkspaceSleeping):
            started_at (None | str | Unset):
     """

    created_at: str
    name: str
    owner_user_id: str
    registry_id: str
    repository: str
    status: WorkspaceStatus
    tag: str
    updated_at: str
    workspace_id: str
    error: None | Unset | WorkspaceError = UNSET
    expires_at: None | str | Unset = UNSET
    finished_at: None | str | Unset = UNSET
    published_image: None | Unset | WorkspacePublishedImage = UNSET
    runtime: None | Unset | WorkspaceRuntime = UNSET
    sleeping: None | Unset | WorkspaceSleeping = UNSET
    started_at: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.workspace_error import WorkspaceError # noqa: PLC0415
        from ..models.workspace_published_image import WorkspacePublishedImage # noqa: PLC0415
        from ..models.workspace_runtime import WorkspaceRuntime # noqa: PLC0415
        from ..models.workspace_sleeping import WorkspaceSleeping # noqa: PLC0415
        created_at = self.created_at

        name = self.name

        owner_user_id = self.owner_user_id

        registry_id = self.registry_id

        repository = self.repository

        status = self.status.value

        tag = self.tag

        updated_at = self.updated_at

        workspace_id = self.workspace_id

        error: dict[str, Any] | None | Unset
        if isinstance(self.error, Unset):
            error = UNSET
        elif isinstance(self.error, WorkspaceError):
            error = self.error.to_dict()
        else:
            error = self.error

        expires_at: None | str | Unset
        if isinstance(self.expires_at, Unset):
            expires_at = UNSET
        else:
            expires_at = self.expires_at

        finished_at: None | str | Unset
        if isinstance(self.finished_at, Unset):
            finished_at = UNSET
        else:
            finished_at = self.finished_at

        published_image: dict[str, Any] | None | Unset
        if isinstance(self.published_image, Unset):
            published_image = UNSET
        elif isinstance(self.published_image, WorkspacePublishedImage):
            published_image = self.published_image.to_dict()
        else:
            published_image = self.published_image

        runtime: dict[str, Any] | None | Unset
        if isinstance(self.runtime, Unset):
            runtime = UNSET
        elif isinstance(self.runtime, WorkspaceRuntime):
            runtime = self.runtime.to_dict()
        else:
            runtime = self.runtime

        sleeping: dict[str, Any] | None | Unset
        if isinstance(self.sleeping, Unset):
            sleeping = UNSET
        elif isinstance(self.sleeping, WorkspaceSleeping):
            sleeping = self.sleeping.to_dict()
        else:
            sleeping = self.sleeping

        started_at: None | str | Unset
        if isinstance(self.started_at, Unset):
            started_at = UNSET
        else:
            started_at = self.started_at


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "createdAt": created_at,
            "name": name,
            "ownerUserId": owner_user_id,
            "registryId": registry_id,
            "repository": repository,
            "status": status,
            "tag": tag,
            "updatedAt": updated_at,
            "workspaceId": workspace_id,
        })
        if error is not UNSET:
            field_dict["error"] = error
        if expires_at is not UNSET:
            field_dict["expiresAt"] = expires_at
        if finished_at is not UNSET:
            field_dict["finishedAt"] = finished_at
        if published_image is not UNSET:
            field_dict["publishedImage"] = published_image
        if runtime is not UNSET:
            field_dict["runtime"] = runtime
        if sleeping is not UNSET:
            field_dict["sleeping"] = sleeping
        if started_at is not UNSET:
            field_dict["startedAt"] = started_at

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.workspace_error import WorkspaceError # noqa: PLC0415
        from ..models.workspace_published_image import WorkspacePublishedImage # noqa: PLC0415
        from ..models.workspace_runtime import WorkspaceRuntime # noqa: PLC0415
        from ..models.workspace_sleeping import WorkspaceSleeping # noqa: PLC0415
        d = dict(src_dict)
        created_at = d.pop("createdAt")

        name = d.pop("name")

        owner_user_id = d.pop("ownerUserId")

        registry_id = d.pop("registryId")

        repository = d.pop("repository")

        status = WorkspaceStatus(d.pop("status"))




        tag = d.pop("tag")

        updated_at = d.pop("updatedAt")

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


        def _parse_expires_at(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        expires_at = _parse_expires_at(d.pop("expiresAt", UNSET))


        def _parse_finished_at(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        finished_at = _parse_finished_at(d.pop("finishedAt", UNSET))


        def _parse_published_image(data: object) -> None | Unset | WorkspacePublishedImage:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                published_image_type_1 = WorkspacePublishedImage.from_dict(data)



                return published_image_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Unset | WorkspacePublishedImage, data)

        published_image = _parse_published_image(d.pop("publishedImage", UNSET))


        def _parse_runtime(data: object) -> None | Unset | WorkspaceRuntime:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                runtime_type_1 = WorkspaceRuntime.from_dict(data)



                return runtime_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Unset | WorkspaceRuntime, data)

        runtime = _parse_runtime(d.pop("runtime", UNSET))


        def _parse_sleeping(data: object) -> None | Unset | WorkspaceSleeping:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                sleeping_type_1 = WorkspaceSleeping.from_dict(data)



                return sleeping_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Unset | WorkspaceSleeping, data)

        sleeping = _parse_sleeping(d.pop("sleeping", UNSET))


        def _parse_started_at(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        started_at = _parse_started_at(d.pop("startedAt", UNSET))


        workspace_summary = cls(
            created_at=created_at,
            name=name,
            owner_user_id=owner_user_id,
            registry_id=registry_id,
            repository=repository,
            status=status,
            tag=tag,
            updated_at=updated_at,
            workspace_id=workspace_id,
            error=error,
            expires_at=expires_at,
            finished_at=finished_at,
            published_image=published_image,
            runtime=runtime,
            sleeping=sleeping,
            started_at=started_at,
        )


        workspace_summary.additional_properties = d
        return workspace_summary

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
