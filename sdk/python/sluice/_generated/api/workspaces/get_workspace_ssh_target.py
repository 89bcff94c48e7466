from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.error_body import ErrorBody
from ...models.workspace_ssh_target import WorkspaceSshTarget
from ...types import UNSET, Unset
from typing import cast



def _get_kwargs(
    workspace_id: str,
    *,
    x_sealant_principal_id: None | str | Unset = UNSET,

) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    if not isinstance(x_sealant_principal_id, Unset):
        headers["x-sealant-principal-id"] = x_sealant_principal_id



    

    

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/workspaces/{workspace_id}/ssh-target".format(workspace_id=quote(str(workspace_id), safe=""),),
    }


    _kwargs["headers"] = headers
    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> ErrorBody | WorkspaceSshTarget | None:
    if response.status_code == 200:
        response_200 = WorkspaceSshTarget.from_dict(response.json())



        return response_200

    if response.status_code == 401:
        response_401 = ErrorBody.from_dict(response.json())



        return response_401

    if response.status_code == 404:
        response_404 = ErrorBody.from_dict(response.json())



        return response_404

    if response.status_code == 409:
        response_409 = ErrorBody.from_dict(response.json())



        return response_409

    if response.status_code == 500:
        response_500 = ErrorBody.from_dict(response.json())



        return response_500

    if response.status_code == 503:
        response_503 = ErrorBody.from_dict(response.json())



        return response_503

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[ErrorBody | WorkspaceSshTarget]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    workspace_id: str,
    *,
    client: AuthenticatedClient,
    x_sealant_principal_id: None | str | Unset = UNSET,

) -> Response[ErrorBody | WorkspaceSshTarget]:
    """ Where an SSH gateway connects for this workspace (gateway-authenticated).

    Args:
        workspace_id (str):
        x_sealant_principal_id (None | str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorBody | WorkspaceSshTarget]
     """


    kwargs = _get_kwargs(
        workspace_id=workspace_id,
x_sealant_principal_id=x_sealant_principal_id,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    workspace_id: str,
    *,
    client: AuthenticatedClient,
    x_sealant_principal_id: None | str | Unset = UNSET,

) -> ErrorBody | WorkspaceSshTarget | None:
    """ Where an SSH gateway connects for this workspace (gateway-authenticated).

    Args:
        workspace_id (str):
        x_sealant_principal_id (None | str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorBody | WorkspaceSshTarget
     """


    return sync_detailed(
        workspace_id=workspace_id,
client=client,
x_sealant_principal_id=x_sealant_principal_id,

    ).parsed

async def asyncio_detailed(
    workspace_id: str,
    *,
    client: AuthenticatedClient,
    x_sealant_principal_id: None | str | Unset = UNSET,

) -> Response[ErrorBody | WorkspaceSshTarget]:
    """ Where an SSH gateway connects for this workspace (gateway-authenticated).

    Args:
        workspace_id (str):
        x_sealant_principal_id (None | str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorBody | WorkspaceSshTarget]
     """


    kwargs = _get_kwargs(
        workspace_id=workspace_id,
x_sealant_principal_id=x_sealant_principal_id,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    workspace_id: str,
    *,
    client: AuthenticatedClient,
    x_sealant_principal_id: None | str | Unset = UNSET,

) -> ErrorBody | WorkspaceSshTarget | None:
    """ Where an SSH gateway connects for this workspace (gateway-authenticated).

    Args:
        workspace_id (str):
        x_sealant_principal_id (None | str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorBody | WorkspaceSshTarget
     """


    return (await asyncio_detailed(
        workspace_id=workspace_id,
client=client,
x_sealant_principal_id=x_sealant_principal_id,

    )).parsed
