from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.error_body import ErrorBody
from ...models.forget_host_response import ForgetHostResponse
from ...models.operator_request import OperatorRequest
from typing import cast



def _get_kwargs(
    host: str,
    *,
    body: OperatorRequest,

) -> dict[str, Any]:
    headers: dict[str, Any] = {}


    

    

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/hosts/{host}/forget".format(host=quote(str(host), safe=""),),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> ErrorBody | ForgetHostResponse | None:
    if response.status_code == 200:
        response_200 = ForgetHostResponse.from_dict(response.json())



        return response_200

    if response.status_code == 400:
        response_400 = ErrorBody.from_dict(response.json())



        return response_400

    if response.status_code == 401:
        response_401 = ErrorBody.from_dict(response.json())



        return response_401

    if response.status_code == 404:
        response_404 = ErrorBody.from_dict(response.json())



        return response_404

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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[ErrorBody | ForgetHostResponse]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    host: str,
    *,
    client: AuthenticatedClient,
    body: OperatorRequest,

) -> Response[ErrorBody | ForgetHostResponse]:
    """ Declares the host lost with its executors, on the operator's word: each
    is failed as `executor-lost` (its unsaved work with it), its capture
    session free for a new executor, and a launch placed there but not
    made goes elsewhere. A worker of the host that beats again brings it
    back, with nothing of what was written off.

    Args:
        host (str):
        body (OperatorRequest): Who asks (an operator's name, recorded with what it did).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorBody | ForgetHostResponse]
     """


    kwargs = _get_kwargs(
        host=host,
body=body,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    host: str,
    *,
    client: AuthenticatedClient,
    body: OperatorRequest,

) -> ErrorBody | ForgetHostResponse | None:
    """ Declares the host lost with its executors, on the operator's word: each
    is failed as `executor-lost` (its unsaved work with it), its capture
    session free for a new executor, and a launch placed there but not
    made goes elsewhere. A worker of the host that beats again brings it
    back, with nothing of what was written off.

    Args:
        host (str):
        body (OperatorRequest): Who asks (an operator's name, recorded with what it did).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorBody | ForgetHostResponse
     """


    return sync_detailed(
        host=host,
client=client,
body=body,

    ).parsed

async def asyncio_detailed(
    host: str,
    *,
    client: AuthenticatedClient,
    body: OperatorRequest,

) -> Response[ErrorBody | ForgetHostResponse]:
    """ Declares the host lost with its executors, on the operator's word: each
    is failed as `executor-lost` (its unsaved work with it), its capture
    session free for a new executor, and a launch placed there but not
    made goes elsewhere. A worker of the host that beats again brings it
    back, with nothing of what was written off.

    Args:
        host (str):
        body (OperatorRequest): Who asks (an operator's name, recorded with what it did).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorBody | ForgetHostResponse]
     """


    kwargs = _get_kwargs(
        host=host,
body=body,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    host: str,
    *,
    client: AuthenticatedClient,
    body: OperatorRequest,

) -> ErrorBody | ForgetHostResponse | None:
    """ Declares the host lost with its executors, on the operator's word: each
    is failed as `executor-lost` (its unsaved work with it), its capture
    session free for a new executor, and a launch placed there but not
    made goes elsewhere. A worker of the host that beats again brings it
    back, with nothing of what was written off.

    Args:
        host (str):
        body (OperatorRequest): Who asks (an operator's name, recorded with what it did).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorBody | ForgetHostResponse
     """


    return (await asyncio_detailed(
        host=host,
client=client,
body=body,

    )).parsed
