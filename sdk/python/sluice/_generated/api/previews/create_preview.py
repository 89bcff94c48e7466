from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.create_preview_request import CreatePreviewRequest
from ...models.error_body import ErrorBody
from ...models.preview_record import PreviewRecord
from typing import cast



def _get_kwargs(
    workspace_id: str,
    *,
    body: CreatePreviewRequest,

) -> dict[str, Any]:
    headers: dict[str, Any] = {}


    

    

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/workspaces/{workspace_id}/previews".format(workspace_id=quote(str(workspace_id), safe=""),),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> ErrorBody | PreviewRecord | None:
    if response.status_code == 201:
        response_201 = PreviewRecord.from_dict(response.json())



        return response_201

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

    if response.status_code == 422:
        response_422 = ErrorBody.from_dict(response.json())



        return response_422

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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[ErrorBody | PreviewRecord]:
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
    body: CreatePreviewRequest,

) -> Response[ErrorBody | PreviewRecord]:
    """ Grants a preview of one of the workspace's ports, bound to its current
    run: a stop or restart ends it. A private grant's URL carries the token
    of its first visit, shown only here.

    Args:
        workspace_id (str):
        body (CreatePreviewRequest): A preview of one of the workspace's ports.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorBody | PreviewRecord]
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
    body: CreatePreviewRequest,

) -> ErrorBody | PreviewRecord | None:
    """ Grants a preview of one of the workspace's ports, bound to its current
    run: a stop or restart ends it. A private grant's URL carries the token
    of its first visit, shown only here.

    Args:
        workspace_id (str):
        body (CreatePreviewRequest): A preview of one of the workspace's ports.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorBody | PreviewRecord
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
    body: CreatePreviewRequest,

) -> Response[ErrorBody | PreviewRecord]:
    """ Grants a preview of one of the workspace's ports, bound to its current
    run: a stop or restart ends it. A private grant's URL carries the token
    of its first visit, shown only here.

    Args:
        workspace_id (str):
        body (CreatePreviewRequest): A preview of one of the workspace's ports.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorBody | PreviewRecord]
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
    body: CreatePreviewRequest,

) -> ErrorBody | PreviewRecord | None:
    """ Grants a preview of one of the workspace's ports, bound to its current
    run: a stop or restart ends it. A private grant's URL carries the token
    of its first visit, shown only here.

    Args:
        workspace_id (str):
        body (CreatePreviewRequest): A preview of one of the workspace's ports.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorBody | PreviewRecord
     """


    return (await asyncio_detailed(
        workspace_id=workspace_id,
client=client,
body=body,

    )).parsed
