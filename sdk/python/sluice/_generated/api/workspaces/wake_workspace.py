from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.error_body import ErrorBody
from ...models.owner_request import OwnerRequest
from ...models.wake_workspace_response import WakeWorkspaceResponse
from typing import cast



def _get_kwargs(
    workspace_id: str,
    *,
    body: OwnerRequest,

) -> dict[str, Any]:
    headers: dict[str, Any] = {}


    

    

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/workspaces/{workspace_id}/wake".format(workspace_id=quote(str(workspace_id), safe=""),),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> ErrorBody | WakeWorkspaceResponse | None:
    if response.status_code == 202:
        response_202 = WakeWorkspaceResponse.from_dict(response.json())



        return response_202

    if response.status_code == 400:
        response_400 = ErrorBody.from_dict(response.json())



        return response_400

    if response.status_code == 401:
        response_401 = ErrorBody.from_dict(response.json())



        return response_401

    if response.status_code == 404:
        response_404 = ErrorBody.from_dict(response.json())



        return response_404

    if response.status_code == 409:
        response_409 = ErrorBody.from_dict(response.json())



        return response_409

    if response.status_code == 413:
        response_413 = ErrorBody.from_dict(response.json())



        return response_413

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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[ErrorBody | WakeWorkspaceResponse]:
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
    body: OwnerRequest,

) -> Response[ErrorBody | WakeWorkspaceResponse]:
    """ Wake a sleeping workspace (202): a new run restores its capture
    session's head; one whose sleep is still saving its work is woken once
    that is done. A running workspace is answered as it is (`woken: false`).

    Args:
        workspace_id (str):
        body (OwnerRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorBody | WakeWorkspaceResponse]
     """


    kwargs = _get_kwargs(
        workspace_id=workspace_id,
body=body,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    workspace_id: str,
    *,
    client: AuthenticatedClient,
    body: OwnerRequest,

) -> ErrorBody | WakeWorkspaceResponse | None:
    """ Wake a sleeping workspace (202): a new run restores its capture
    session's head; one whose sleep is still saving its work is woken once
    that is done. A running workspace is answered as it is (`woken: false`).

    Args:
        workspace_id (str):
        body (OwnerRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorBody | WakeWorkspaceResponse
     """


    return sync_detailed(
        workspace_id=workspace_id,
client=client,
body=body,

    ).parsed

async def asyncio_detailed(
    workspace_id: str,
    *,
    client: AuthenticatedClient,
    body: OwnerRequest,

) -> Response[ErrorBody | WakeWorkspaceResponse]:
    """ Wake a sleeping workspace (202): a new run restores its capture
    session's head; one whose sleep is still saving its work is woken once
    that is done. A running workspace is answered as it is (`woken: false`).

    Args:
        workspace_id (str):
        body (OwnerRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorBody | WakeWorkspaceResponse]
     """


    kwargs = _get_kwargs(
        workspace_id=workspace_id,
body=body,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    workspace_id: str,
    *,
    client: AuthenticatedClient,
    body: OwnerRequest,

) -> ErrorBody | WakeWorkspaceResponse | None:
    """ Wake a sleeping workspace (202): a new run restores its capture
    session's head; one whose sleep is still saving its work is woken once
    that is done. A running workspace is answered as it is (`woken: false`).

    Args:
        workspace_id (str):
        body (OwnerRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorBody | WakeWorkspaceResponse
     """


    return (await asyncio_detailed(
        workspace_id=workspace_id,
client=client,
body=body,

    )).parsed
